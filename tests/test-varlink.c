/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "varlink.h"

/* ---- framer ---- */

static const char stream[] =
        "{\"method\":\"io.svff.List\"}\0"
        "{\"method\":\"io.svff.Status\",\"parameters\":{\"x\":\"a\\u0000\"}}\0"
        "\0" /* an empty message is a message (and bad JSON) */
        "{\"method\":\"org.varlink.service.GetInfo\"}\0";
static const char *const stream_msgs[] = {
        "{\"method\":\"io.svff.List\"}",
        "{\"method\":\"io.svff.Status\",\"parameters\":{\"x\":\"a\\u0000\"}}",
        "",
        "{\"method\":\"org.varlink.service.GetInfo\"}",
};

/* Feeds stream in chunks of the given sizes (cycled) and checks that
 * exactly stream_msgs come out, in order. */
static void feed_in_chunks(const size_t *sizes, size_t n_sizes) {
        struct svff_varlink_framer f = {};
        size_t off = 0, got = 0, k = 0;

        while (off < sizeof(stream) - 1) {
                size_t n = sizes[k++ % n_sizes];
                char *m;
                size_t mlen;
                int r;

                if (n > sizeof(stream) - 1 - off)
                        n = sizeof(stream) - 1 - off;
                ck_assert_int_eq(svff_varlink_framer_feed(&f, stream + off, n), 0);
                off += n;

                while ((r = svff_varlink_framer_next(&f, &m, &mlen)) > 0) {
                        ck_assert_uint_lt(got, ELEMENTSOF(stream_msgs));
                        ck_assert_uint_eq(mlen, strlen(stream_msgs[got]));
                        ck_assert_str_eq(m, stream_msgs[got]);
                        free(m);
                        got++;
                }
                ck_assert_int_eq(r, 0);
        }
        ck_assert_uint_eq(got, ELEMENTSOF(stream_msgs));
        svff_varlink_framer_done(&f);
        ck_assert_ptr_null(f.buf);
}

START_TEST(test_framer_splits) {
        size_t one = 1;

        feed_in_chunks(&one, 1);  /* byte by byte */

        /* every single split point */
        for (size_t split = 1; split < sizeof(stream) - 1; split++) {
                size_t sizes[] = { split, sizeof(stream) };
                feed_in_chunks(sizes, 2);
        }

        /* pseudo-random chunk sizes, fixed seed for reproducibility */
        unsigned seed = 1;
        for (int round = 0; round < 200; round++) {
                size_t sizes[16];
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                        sizes[i] = 1 + (size_t) rand_r(&seed) % 40;
                feed_in_chunks(sizes, ELEMENTSOF(sizes));
        }

        /* everything in one feed */
        size_t all = sizeof(stream);
        feed_in_chunks(&all, 1);
}
END_TEST

START_TEST(test_framer_incomplete) {
        struct svff_varlink_framer f = {};
        char *m = (char *) 0x1;

        ck_assert_int_eq(svff_varlink_framer_feed(&f, "{\"method\":\"io.svff.List\"}", 25), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, NULL), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, NULL), 0);
        ck_assert_ptr_eq(m, (char *) 0x1);
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "", 0), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, NULL), 0);
        /* the terminator completes it */
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "\0", 1), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, NULL), 1);
        ck_assert_str_eq(m, "{\"method\":\"io.svff.List\"}");
        free(m);
        svff_varlink_framer_done(&f);
}
END_TEST

START_TEST(test_framer_oversized) {
        struct svff_varlink_framer f = { .max = 8 };
        char *m;
        size_t n;

        /* exactly max is fine */
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "12345678\0", 9), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), 1);
        ck_assert_uint_eq(n, 8);
        free(m);

        /* a complete message before the oversized one still comes out */
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "ok\0", 3), 0);
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "12345678", 8), 0);
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "9", 1), -EMSGSIZE);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), 1);
        ck_assert_str_eq(m, "ok");
        free(m);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), -EMSGSIZE);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), -EMSGSIZE);
        svff_varlink_framer_done(&f);
        ck_assert_uint_eq(f.max, 8);

        /* an oversized message that arrives complete in one feed */
        ck_assert_int_eq(svff_varlink_framer_feed(&f, "123456789\0", 10), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), -EMSGSIZE);
        svff_varlink_framer_done(&f);

        /* the default cap */
        struct svff_varlink_framer g = {};
        _cleanup_free_ char *big = malloc(SVFF_VARLINK_MESSAGE_MAX + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', SVFF_VARLINK_MESSAGE_MAX + 1);
        ck_assert_int_eq(svff_varlink_framer_feed(&g, big, SVFF_VARLINK_MESSAGE_MAX), 0);
        ck_assert_int_eq(svff_varlink_framer_next(&g, &m, &n), 0);
        ck_assert_int_eq(svff_varlink_framer_feed(&g, big, 1), -EMSGSIZE);
        ck_assert_int_eq(svff_varlink_framer_next(&g, &m, &n), -EMSGSIZE);
        svff_varlink_framer_done(&g);
}
END_TEST

START_TEST(test_framer_many) {
        struct svff_varlink_framer f = {};
        char msg[32], *m;
        size_t n;

        /* 1000 pipelined calls, fed one byte at a time: must stay linear
         * (this would take minutes if every feed rescanned the buffer) */
        for (int i = 0; i < 1000; i++) {
                int k = snprintf(msg, sizeof(msg), "{\"n\":%d}", i);
                for (int j = 0; j <= k; j++)
                        ck_assert_int_eq(svff_varlink_framer_feed(&f, msg + j, 1), 0);
        }
        for (int i = 0; i < 1000; i++) {
                snprintf(msg, sizeof(msg), "{\"n\":%d}", i);
                ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), 1);
                ck_assert_str_eq(m, msg);
                free(m);
        }
        ck_assert_int_eq(svff_varlink_framer_next(&f, &m, &n), 0);
        svff_varlink_framer_done(&f);
}
END_TEST

/* ---- call decoding ---- */

static int parse(const char *s, struct svff_varlink_call *c, const char **why) {
        return svff_varlink_call_parse(s, strlen(s), c, why);
}

START_TEST(test_call_parse_ok) {
        struct svff_varlink_call c = {};
        uint64_t u;

        ck_assert_int_eq(parse("{\"method\":\"io.svff.List\"}", &c, NULL), 0);
        ck_assert_str_eq(c.method, "io.svff.List");
        ck_assert_str_eq(c.interface, "io.svff");
        ck_assert_str_eq(c.member, "List");
        ck_assert(json_object_is_type(c.parameters, json_type_object));
        ck_assert_int_eq(json_object_object_length(c.parameters), 0);
        ck_assert(!c.more && !c.oneway);
        svff_varlink_call_done(&c);
        ck_assert_ptr_null(c.method);

        ck_assert_int_eq(parse("{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":null,"
                               "\"more\":false,\"oneway\":true,\"upgrade\":false}",
                               &c, NULL),
                         0);
        ck_assert_str_eq(c.interface, "org.varlink.service");
        ck_assert_str_eq(c.member, "GetInfo");
        ck_assert(c.oneway && !c.more);
        svff_varlink_call_done(&c);

        /* more, oneway and upgrade are ?bool; a vendor's extension object
         * (reverse-domain name) is allowed and ignored */
        ck_assert_int_eq(parse("{\"method\":\"io.svff.Ping\",\"more\":null,\"oneway\":null,\"upgrade\":null,"
                               "\"com.example.tracing\":{\"id\":\"42\"}}",
                               &c, NULL),
                         0);
        ck_assert(!c.oneway && !c.more);
        ck_assert_int_eq(json_object_object_length(c.parameters), 0);
        svff_varlink_call_done(&c);

        ck_assert_int_eq(parse(" {\"parameters\":{\"pf\":\"0000:03:00.0\",\"numvfs\":18446744073709551616},"
                               "\"method\":\"io.svff-x.v1.Init2\",\"more\":true}\n",
                               &c, NULL),
                         0);
        ck_assert_str_eq(c.interface, "io.svff-x.v1");
        ck_assert_str_eq(c.member, "Init2");
        ck_assert(c.more);
        /* the out-of-range number reaches the method handler as such */
        ck_assert_int_eq(svff_json_get_u64(c.parameters, "numvfs", &u), -ERANGE);
        svff_varlink_call_done(&c);
        svff_varlink_call_done(&c);  /* idempotent */
}
END_TEST

static void expect_fail(const char *s, size_t len, int error) {
        struct svff_varlink_call c = { .method = (char *) 0x1 };
        const char *why = NULL;
        int r;

        r = svff_varlink_call_parse(s, len, &c, &why);
        ck_assert_msg(r == error, "'%.*s': expected %d, got %d", (int) len, s, error, r);
        ck_assert_msg(why && *why, "no reason for '%.*s'", (int) len, s);
        ck_assert_ptr_eq(c.method, (char *) 0x1);  /* untouched */
}

#define FAIL(s, e) expect_fail(s, sizeof(s) - 1, e)

START_TEST(test_call_parse_bad) {
        /* not JSON, not an object */
        FAIL("", -EBADMSG);
        FAIL("{\"method\":\"io.svff.List\"", -EBADMSG);
        FAIL("{\"method\":\"io.svff.List\"} {}", -EBADMSG);
        FAIL("{\"method\":\"io.svff.List\"}x", -EBADMSG);
        FAIL("[\"io.svff.List\"]", -EBADMSG);
        FAIL("\"io.svff.List\"", -EBADMSG);
        FAIL("null", -EBADMSG);
        FAIL("{method:\"io.svff.List\"}", -EBADMSG);
        FAIL("{\"method\":\"io.svff.List\"\0}", -EBADMSG);  /* embedded NUL */
        FAIL("{\"method\":\"io.svff.\xc3\x28\"}", -EBADMSG);  /* bad UTF-8 */

        /* method */
        FAIL("{}", -EPROTO);
        FAIL("{\"parameters\":{}}", -EPROTO);
        FAIL("{\"method\":1}", -EPROTO);
        FAIL("{\"method\":null}", -EPROTO);
        FAIL("{\"method\":[\"io.svff.List\"]}", -EPROTO);
        FAIL("{\"method\":\"List\"}", -EPROTO);
        FAIL("{\"method\":\"svff.List\"}", -EPROTO);  /* interface needs a dot */
        FAIL("{\"method\":\"io.svff.list\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.\"}", -EPROTO);
        FAIL("{\"method\":\"io..svff.List\"}", -EPROTO);
        FAIL("{\"method\":\".io.svff.List\"}", -EPROTO);
        FAIL("{\"method\":\"io-.svff.List\"}", -EPROTO);
        FAIL("{\"method\":\"1o.svff.List\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.Li-st\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\\u0000.X\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List \"}", -EPROTO);

        /* parameters, more, oneway */
        FAIL("{\"method\":\"io.svff.List\",\"parameters\":[]}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"parameters\":\"{}\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"parameters\":1}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"more\":1}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"more\":\"true\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"oneway\":0}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"more\":true,\"oneway\":true}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"upgrade\":true}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"upgrade\":\"no\"}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"extra\":1}", -EPROTO);
        FAIL("{\"method\":\"io.svff.List\",\"extra\":{}}", -EPROTO);      /* not reverse-domain */
        FAIL("{\"method\":\"io.svff.List\",\"com.example\":1}", -EPROTO); /* not an object */
        FAIL("{\"method\":\"io.svff.List\",\"com..example\":{}}", -EPROTO);
}
END_TEST

START_TEST(test_call_parse_deep) {
        char buf[256];
        int n = 0;

        /* parameters at level 2; 15 more levels exceed the limit of 16 */
        n += snprintf(buf + n, sizeof(buf) - (size_t) n, "{\"method\":\"io.svff.List\",\"parameters\":{\"a\":");
        for (int i = 0; i < 15; i++)
                buf[n++] = '[';
        for (int i = 0; i < 15; i++)
                buf[n++] = ']';
        buf[n++] = '}';
        buf[n++] = '}';
        expect_fail(buf, (size_t) n, -EBADMSG);

        /* and 14 are fine */
        struct svff_varlink_call c = {};
        n = snprintf(buf, sizeof(buf), "{\"method\":\"io.svff.List\",\"parameters\":{\"a\":");
        for (int i = 0; i < 14; i++)
                buf[n++] = '[';
        for (int i = 0; i < 14; i++)
                buf[n++] = ']';
        buf[n++] = '}';
        buf[n++] = '}';
        ck_assert_int_eq(svff_varlink_call_parse(buf, (size_t) n, &c, NULL), 0);
        svff_varlink_call_done(&c);
}
END_TEST

/* ---- encoders ---- */

START_TEST(test_encode) {
        _cleanup_(json_object_putp) struct json_object *p = json_object_new_object();
        struct svff_varlink_call c = {};
        char *m;
        size_t n;

        json_object_object_add(p, "pf", json_object_new_string("0000:03:00.0"));
        json_object_object_add(p, "numvfs", json_object_new_uint64(UINT64_MAX));

        ck_assert_int_eq(svff_varlink_encode_call("io.svff.Init", p, true, false, &m, &n), 0);
        ck_assert_uint_eq(n, strlen(m) + 1);
        ck_assert_int_eq(m[n - 1], 0);
        /* round trip through the decoder */
        ck_assert_int_eq(svff_varlink_call_parse(m, n - 1, &c, NULL), 0);
        ck_assert_str_eq(c.method, "io.svff.Init");
        ck_assert(c.more && !c.oneway);
        ck_assert(json_object_equal(c.parameters, p));
        svff_varlink_call_done(&c);
        free(m);

        /* borrowed: still ours, unchanged */
        ck_assert_int_eq(json_object_object_length(p), 2);

        ck_assert_int_eq(svff_varlink_encode_call("io.svff.List", NULL, false, true, &m, &n), 0);
        ck_assert_str_eq(m, "{\"method\":\"io.svff.List\",\"oneway\":true,\"parameters\":{}}");
        free(m);

        ck_assert_int_eq(svff_varlink_encode_reply(NULL, false, &m, &n), 0);
        ck_assert_str_eq(m, "{\"parameters\":{}}");
        ck_assert_uint_eq(n, sizeof("{\"parameters\":{}}"));
        free(m);

        ck_assert_int_eq(svff_varlink_encode_reply(p, true, &m, &n), 0);
        ck_assert_str_eq(m, "{\"continues\":true,\"parameters\":{\"pf\":\"0000:03:00.0\",\"numvfs\":18446744073709551615}}");
        free(m);

        ck_assert_int_eq(svff_varlink_encode_error(SVFF_VARLINK_ERROR_METHOD_NOT_FOUND, NULL, &m, &n), 0);
        ck_assert_str_eq(m, "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{}}");
        free(m);

        m = (char *) 0x1;
        ck_assert_int_eq(svff_varlink_encode_call("List", NULL, false, false, &m, &n), -EINVAL);
        ck_assert_int_eq(svff_varlink_encode_call("io.svff.List", NULL, true, true, &m, &n), -EINVAL);
        ck_assert_int_eq(svff_varlink_encode_error("NoSuchDevice", NULL, &m, &n), -EINVAL);
        _cleanup_(json_object_putp) struct json_object *arr = json_object_new_array();
        ck_assert_int_eq(svff_varlink_encode_reply(arr, false, &m, &n), -EINVAL);
        ck_assert_ptr_eq(m, (char *) 0x1);

        /* the peer would refuse an oversized message: so does the encoder;
         * calls have the small cap, replies the large one */
        _cleanup_free_ char *big = malloc(SVFF_VARLINK_MESSAGE_MAX);
        memset(big, 'x', SVFF_VARLINK_MESSAGE_MAX - 1);
        big[SVFF_VARLINK_MESSAGE_MAX - 1] = 0;
        json_object_object_add(p, "big", json_object_new_string(big));
        ck_assert_int_eq(svff_varlink_encode_call("io.svff.List", p, false, false, &m, &n), -EMSGSIZE);
        ck_assert_ptr_eq(m, (char *) 0x1);
        ck_assert_int_eq(svff_varlink_encode_reply(p, false, &m, &n), 0);
        ck_assert_uint_gt(n, SVFF_VARLINK_MESSAGE_MAX);
        free(m);
        m = (char *) 0x1;

        _cleanup_free_ char *huge = malloc(SVFF_VARLINK_REPLY_MAX);
        memset(huge, 'x', SVFF_VARLINK_REPLY_MAX - 1);
        huge[SVFF_VARLINK_REPLY_MAX - 1] = 0;
        json_object_object_add(p, "big", json_object_new_string(huge));
        ck_assert_int_eq(svff_varlink_encode_reply(p, false, &m, &n), -EMSGSIZE);
        ck_assert_int_eq(svff_varlink_encode_error(SVFF_VARLINK_ERROR_PROTOCOL, p, &m, &n), -EMSGSIZE);
        ck_assert_ptr_eq(m, (char *) 0x1);
}
END_TEST

/* Error text quotes user input cut at a byte count ("%.64s"); what is
 * sent must still be valid UTF-8, or the peer rejects the whole reply. */
START_TEST(test_encode_utf8) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "caf\xc3\xa9", "caf\xc3\xa9" },                 /* valid: unchanged */
                { "'\xc3\xa9\xc3' is not", "'\xc3\xa9' is not" },  /* é cut short: dropped */
                { "\xe2\x82", "" },                                  /* cut at the end */
                { "\xf0\x9f\x98x", "x" },                            /* 4-byte cut short */
                { "a\xff" "b", "a\xef\xbf\xbd" "b" },                   /* invalid byte */
                { "\x80", "\xef\xbf\xbd" },                          /* stray continuation */
                { "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },        /* overlong '/' */
                { "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
                { "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* > U+10FFFF */
                { "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },     /* U+1F600 */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_object_putp) struct json_object *p = json_object_new_object();
                _cleanup_(json_object_putp) struct json_object *back = NULL;
                _cleanup_free_ char *m = NULL, *want = NULL;
                size_t n;

                json_object_object_add(p, "message", json_object_new_string(cases[i].in));
                ck_assert_int_eq(svff_varlink_encode_error("io.svff.NoSuchDevice", p, &m, &n), 0);
                ck_assert_uint_eq(n, strlen(m) + 1);
                ck_assert_int_ge(asprintf(&want, "{\"error\":\"io.svff.NoSuchDevice\",\"parameters\":{\"message\":\"%s\"}}",
                                          cases[i].out), 0);
                ck_assert_str_eq(m, want);
                /* and a strict parser takes it */
                ck_assert_int_eq(svff_json_parse(m, n - 1, SVFF_VARLINK_DEPTH_MAX, &back, NULL), 0);
        }
}
END_TEST

/* ---- client ---- */

static void socketpair_client(struct svff_varlink_client **ret, int *ret_peer) {
        int sv[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(svff_varlink_client_new_fd(sv[0], ret), 0);
        *ret_peer = sv[1];
}

static void peer_write(int fd, const char *s, size_t n) {
        ck_assert_int_eq(write(fd, s, n), (ssize_t) n);
}

/* Reads one call from the peer side, byte by byte (tests only). */
static char *peer_read_msg(int fd) {
        struct svff_varlink_framer f = {};
        char *m = NULL, c;

        while (svff_varlink_framer_next(&f, &m, NULL) == 0) {
                ck_assert_int_eq(read(fd, &c, 1), 1);
                ck_assert_int_eq(svff_varlink_framer_feed(&f, &c, 1), 0);
        }
        svff_varlink_framer_done(&f);
        return m;
}

START_TEST(test_client_socketpair) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        _cleanup_close_ int peer = -EBADF;
        struct json_object *p = NULL;
        char *error = NULL, *m;
        bool continues = true;

        socketpair_client(&c, &peer);

        /* a single call; the reply arrives in three pieces, before the
         * call is even sent (the socket buffers it) */
        peer_write(peer, "{\"parame", 8);
        peer_write(peer, "ters\":{\"n\":1}}", 14);
        peer_write(peer, "\0", 1);
        ck_assert_int_eq(svff_varlink_client_call(c, "io.svff.List", NULL, 5 * USEC_PER_SEC, &p, &error), 0);
        ck_assert_ptr_null(error);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(p, "n")), 1);
        json_object_put(p);
        m = peer_read_msg(peer);
        ck_assert_str_eq(m, "{\"method\":\"io.svff.List\",\"parameters\":{}}");
        free(m);

        /* streamed replies, then an error, all in one write: in order */
        static const char replies[] =
                "{\"parameters\":{\"i\":0},\"continues\":true}\0"
                "{\"parameters\":{\"i\":1},\"continues\":true}\0"
                "{\"parameters\":{\"i\":2}}\0"
                "{\"error\":\"io.svff.NoSuchDevice\",\"parameters\":{\"device\":\"0000:03:00.9\"}}\0"
                "{\"error\":\"io.svff.NoSuchDevice\"}\0";
        peer_write(peer, replies, sizeof(replies) - 1);
        ck_assert_int_eq(svff_varlink_client_send(c, "io.svff.Monitor", NULL, true, false), 0);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(svff_varlink_client_read(c, 0, &p, &error, &continues), 0);
                ck_assert_int_eq(json_object_get_int(json_object_object_get(p, "i")), i);
                ck_assert(continues == (i < 2));
                ck_assert_ptr_null(error);
                json_object_put(p);
        }
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), 0);
        ck_assert_str_eq(error, "io.svff.NoSuchDevice");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(p, "device")), "0000:03:00.9");
        ck_assert(!continues);
        free(error);
        json_object_put(p);
        /* an error without parameters gets an empty object */
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), 0);
        ck_assert(json_object_is_type(p, json_type_object));
        free(error);
        json_object_put(p);
        m = peer_read_msg(peer);
        ck_assert_str_eq(m, "{\"method\":\"io.svff.Monitor\",\"more\":true,\"parameters\":{}}");
        free(m);
}
END_TEST

START_TEST(test_client_failures) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        int peer;
        struct json_object *p = (struct json_object *) 0x1;
        char *error = (char *) 0x1;
        bool continues;
        usec_t t;

        socketpair_client(&c, &peer);

        /* nothing arrives: the deadline holds */
        t = svff_now_usec();
        ck_assert_int_eq(svff_varlink_client_read(c, 50 * USEC_PER_MSEC, &p, &error, &continues), -ETIMEDOUT);
        t = svff_now_usec() - t;
        ck_assert_uint_ge(t, 50 * USEC_PER_MSEC);
        ck_assert_uint_lt(t, 2 * USEC_PER_SEC);

        /* malformed replies */
        peer_write(peer, "{\"parameters\":[]}\0", 18);
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), -EBADMSG);
        peer_write(peer, "{\"continues\":1}\0", 16);
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), -EBADMSG);
        peer_write(peer, "{\"error\":\"oops\"}\0", 17);
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), -EBADMSG);
        peer_write(peer, "not json\0", 9);
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), -EBADMSG);
        /* a streamed reply to a single call */
        peer_write(peer, "{\"parameters\":{},\"continues\":true}\0", 35);
        ck_assert_int_eq(svff_varlink_client_call(c, "io.svff.List", NULL, USEC_PER_SEC, &p, &error), -EBADMSG);
        ck_assert_ptr_eq(p, (struct json_object *) 0x1);
        ck_assert_ptr_eq(error, (char *) 0x1);

        /* half a reply, then the daemon goes away */
        peer_write(peer, "{\"parameters\":", 14);
        close(peer);
        ck_assert_int_eq(svff_varlink_client_read(c, USEC_PER_SEC, &p, &error, &continues), -ECONNRESET);
        /* writing to it is an error, not a SIGPIPE that kills us */
        int r = svff_varlink_client_send(c, "io.svff.List", NULL, false, false);
        ck_assert_msg(r == -EPIPE || r == -ECONNRESET, "send: %d", r);
        ck_assert_ptr_eq(p, (struct json_object *) 0x1);
}
END_TEST

struct big_reply {
        int fd;
        size_t len;
};

/* Writes a reply of len bytes (NUL excluded): {"parameters":{"s":"xxx..."}} */
static void *big_reply_writer(void *userdata) {
        struct big_reply *b = userdata;
        static const char head[] = "{\"parameters\":{\"s\":\"", tail[] = "\"}}";
        size_t n = b->len + 1;
        char *msg = malloc(n);

        ck_assert_ptr_nonnull(msg);
        memset(msg, 'x', n);
        memcpy(msg, head, sizeof(head) - 1);
        memcpy(msg + b->len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
        msg[b->len] = 0;
        for (size_t off = 0; off < n;) {
                ssize_t k = send(b->fd, msg + off, n - off, MSG_NOSIGNAL);

                if (k <= 0)
                        break;  /* the client gave up reading */
                off += (size_t) k;
        }
        free(msg);
        return NULL;
}

static int read_big_reply(struct svff_varlink_client *c, int peer, size_t len) {
        struct big_reply b = { .fd = peer, .len = len };
        struct json_object *p = NULL;
        char *error = NULL;
        bool continues;
        pthread_t t;
        int r;

        ck_assert_int_eq(pthread_create(&t, NULL, big_reply_writer, &b), 0);
        r = svff_varlink_client_read(c, 10 * USEC_PER_SEC, &p, &error, &continues);
        if (r == 0) {
                const char *s = NULL;

                ck_assert_ptr_null(error);
                ck_assert_int_eq(svff_json_get_string(p, "s", &s), 0);
                ck_assert_uint_eq(strlen(s), len - 23);
                json_object_put(p);
        } else
                shutdown(peer, SHUT_RDWR);  /* unblock the writer */
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        return r;
}

/* Replies outgrow calls: a List of ~1500 VFs is over the call cap, and
 * the client must still read it. */
START_TEST(test_client_big_reply) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        int peer;

        socketpair_client(&c, &peer);
        ck_assert_int_eq(read_big_reply(c, peer, 4 * SVFF_VARLINK_MESSAGE_MAX), 0);
        ck_assert_int_eq(read_big_reply(c, peer, SVFF_VARLINK_MESSAGE_MAX + 1), 0);
        close(peer);
        svff_varlink_client_free(TAKE_PTR(c));

        /* a caller's own cap holds */
        socketpair_client(&c, &peer);
        svff_varlink_client_set_max_message(c, 64 * 1024);
        ck_assert_int_eq(read_big_reply(c, peer, 64 * 1024), 0);
        ck_assert_int_eq(read_big_reply(c, peer, 64 * 1024 + 1), -EMSGSIZE);
        close(peer);
}
END_TEST

struct server {
        int listen_fd;
        int n_calls;
};

/* A tiny server: accepts one connection and echoes each call's
 * parameters back, streaming three replies for "more" calls. */
static void *server_thread(void *userdata) {
        struct server *s = userdata;
        struct svff_varlink_framer f = {};
        int fd;

        fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return NULL;

        for (;;) {
                char buf[4096], *m, *out;
                size_t mlen, olen;
                ssize_t k;
                int r;

                while ((r = svff_varlink_framer_next(&f, &m, &mlen)) > 0) {
                        struct svff_varlink_call c = {};

                        if (svff_varlink_call_parse(m, mlen, &c, NULL) < 0)
                                r = svff_varlink_encode_error(SVFF_VARLINK_ERROR_PROTOCOL, NULL, &out, &olen);
                        else {
                                for (int i = 0; c.more && i < 2; i++) {
                                        if (svff_varlink_encode_reply(c.parameters, true, &out, &olen) == 0) {
                                                (void) !write(fd, out, olen);
                                                free(out);
                                        }
                                }
                                r = svff_varlink_encode_reply(c.parameters, false, &out, &olen);
                        }
                        if (r == 0) {
                                (void) !write(fd, out, olen);
                                free(out);
                        }
                        s->n_calls++;
                        svff_varlink_call_done(&c);
                        free(m);
                }
                if (r < 0)
                        break;
                k = read(fd, buf, sizeof(buf));
                if (k <= 0)
                        break;
                if (svff_varlink_framer_feed(&f, buf, (size_t) k) < 0)
                        break;
        }

        svff_varlink_framer_done(&f);
        close(fd);
        return NULL;
}

START_TEST(test_client_connect) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char dir[] = "/tmp/test-varlink.XXXXXX", path[128];
        struct server s = {};
        pthread_t t;
        struct json_object *p;
        char *error;
        bool continues;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sock", dir);
        memcpy(sa.sun_path, path, strlen(path) + 1);

        ck_assert_int_eq(svff_varlink_client_connect(path, &c), -ENOENT);
        ck_assert_ptr_null(c);

        s.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(s.listen_fd, 0);
        ck_assert_int_eq(bind(s.listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(s.listen_fd, 4), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, server_thread, &s), 0);

        ck_assert_int_eq(svff_varlink_client_connect(path, &c), 0);

        _cleanup_(json_object_putp) struct json_object *q = json_object_new_object();
        json_object_object_add(q, "pf", json_object_new_string("0000:03:00.0"));

        /* pipelined: 100 calls out before reading any reply; replies come
         * back in order */
        for (int i = 0; i < 100; i++) {
                json_object_object_add(q, "i", json_object_new_int(i));
                ck_assert_int_eq(svff_varlink_client_send(c, "io.svff.Echo", q, i == 50, false), 0);
        }
        for (int i = 0; i < 100; i++)
                for (int j = 0; j < (i == 50 ? 3 : 1); j++) {
                        ck_assert_int_eq(svff_varlink_client_read(c, 5 * USEC_PER_SEC, &p, &error, &continues), 0);
                        ck_assert_ptr_null(error);
                        ck_assert_int_eq(json_object_get_int(json_object_object_get(p, "i")), i);
                        ck_assert(continues == (i == 50 && j < 2));
                        json_object_put(p);
                }

        ck_assert_int_eq(svff_varlink_client_call(c, "io.svff.Echo", q, 5 * USEC_PER_SEC, &p, &error), 0);
        ck_assert(json_object_equal(p, q));
        json_object_put(p);

        svff_varlink_client_free(TAKE_PTR(c));  /* the server sees EOF */
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(s.n_calls, 101);
        close(s.listen_fd);
        unlink(path);
        rmdir(dir);

        /* abstract namespace, nobody listening */
        snprintf(path, sizeof(path), "@svff-test-%d", (int) getpid());
        ck_assert_int_eq(svff_varlink_client_connect(path, &c), -ECONNREFUSED);

        char longpath[sizeof(sa.sun_path) + 8];
        memset(longpath, 'a', sizeof(longpath) - 1);
        longpath[sizeof(longpath) - 1] = 0;
        ck_assert_int_eq(svff_varlink_client_connect(longpath, &c), -ENAMETOOLONG);
        ck_assert_int_eq(svff_varlink_client_connect("", &c), -EINVAL);
}
END_TEST

static Suite *varlink_suite(void) {
        Suite *s = suite_create("varlink");
        TCase *tc = tcase_create("framer");

        tcase_add_test(tc, test_framer_splits);
        tcase_add_test(tc, test_framer_incomplete);
        tcase_add_test(tc, test_framer_oversized);
        tcase_add_test(tc, test_framer_many);
        suite_add_tcase(s, tc);

        tc = tcase_create("call");
        tcase_add_test(tc, test_call_parse_ok);
        tcase_add_test(tc, test_call_parse_bad);
        tcase_add_test(tc, test_call_parse_deep);
        tcase_add_test(tc, test_encode);
        tcase_add_test(tc, test_encode_utf8);
        suite_add_tcase(s, tc);

        tc = tcase_create("client");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_client_socketpair);
        tcase_add_test(tc, test_client_failures);
        tcase_add_test(tc, test_client_connect);
        tcase_add_test(tc, test_client_big_reply);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(varlink_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}
