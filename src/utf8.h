/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Text svff did not compose itself: a flash hook's output, strings read
 * from devices, names taken from files. JSON text must be UTF-8 (the
 * store's loader and every varlink peer refuse anything else), so such
 * text is checked or mended here before it enters the store or a reply;
 * and it is escaped before it reaches a terminal, where a control
 * character would act instead of being read. */

#include <stdbool.h>
#include <stddef.h>

/* The length of the well-formed UTF-8 sequence at s[0, n) (n > 0;
 * RFC 3629: shortest form, no surrogates, at most U+10FFFF; a NUL byte
 * is U+0000 and well-formed); or 0 and in *ret_bad the bytes to give up
 * on, *ret_cut telling whether they are a character cut short (a lead
 * byte and fewer continuation bytes than it announces, then the end or
 * a byte that is no continuation). */
size_t svff_utf8_sequence(const char *s, size_t n, size_t *ret_bad, bool *ret_cut);

/* How many bytes at the start of s[0, n) are well-formed UTF-8: n when
 * all of them are. */
size_t svff_utf8_valid_length(const char *s, size_t n);

/* s[0, n) as well-formed UTF-8, a malloc'd, NUL-terminated copy in *ret
 * (its length in *ret_len, if non-NULL): every ill-formed sequence
 * becomes U+FFFD; with drop_cut, a character cut short is dropped
 * instead, for text cut at a byte count ("%.64s"), which then reads as
 * cut at the character before. -ENOMEM. */
int svff_utf8_make_valid(const char *s, size_t n, bool drop_cut, char **ret, size_t *ret_len);

/* The string s made valid as above (U+FFFD), malloc'd; NULL for NULL or
 * out of memory. */
char *svff_utf8_dup_valid(const char *s);

/* The string s for a terminal, malloc'd (NULL on out of memory): the C0
 * controls, DEL and bytes that are not UTF-8 as \xNN; the C1 controls
 * and the characters that reorder or break text (U+061C, U+200E,
 * U+200F, U+2028 to U+202E, U+2066 to U+2069) as \uNNNN. With
 * keep_newline, '\n' stays: for messages of several lines, never for a
 * name or a table cell. */
char *svff_utf8_escape(const char *s, bool keep_newline);
