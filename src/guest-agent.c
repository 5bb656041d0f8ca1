/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <json-c/json.h>

#include "guest-agent.h"
#include "json-util.h"
#include "macro.h"
#include "utf8.h"

/* The shell's output, decoded: a few lines per head. */
#define GA_OUTPUT_MAX (64u * 1024u)
#define GA_POLL_MSEC 100

/* Every readable head attribute, as "PATH VALUE NSID NQN" lines (NSID
 * 0 and NQN "-" where they cannot be read; the head's directory is in
 * its subsystem's, which has the NQN); a path node (nvme0c0n1) has
 * none. Always exits 0: no head is an answer too. */
static const char ga_list_heads[] =
        "for f in /sys/block/nvme*/delayed_removal_secs; do "
        "[ -r \"$f\" ] && read -r v < \"$f\" || continue; d=${f%/*}; "
        "{ read -r i < \"$d/nsid\"; } 2>/dev/null || i=0; "
        "{ read -r q < \"$d/../subsysnqn\"; } 2>/dev/null || q=-; "
        "echo \"$f $v $i $q\"; done; exit 0";

int svff_ga_connected_in_xml(const char *xml) {
        xmlDocPtr doc;
        xmlXPathContextPtr xp = NULL;
        xmlXPathObjectPtr res = NULL;
        int r = -EINVAL;

        if (!xml)
                return -EINVAL;
        doc = xmlReadMemory(xml, (int) strlen(xml), "domain.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                            XML_PARSE_NOWARNING);
        if (!doc)
                return -EINVAL;
        xp = xmlXPathNewContext(doc);
        if (xp)
                res = xmlXPathEvalExpression(BAD_CAST "/domain/devices/channel/target[@type='virtio']"
                                                      "[@name='org.qemu.guest_agent.0'][@state='connected']", xp);
        if (res)
                r = res->nodesetval && res->nodesetval->nodeNr > 0;
        xmlXPathFreeObject(res);
        xmlXPathFreeContext(xp);
        xmlFreeDoc(doc);
        return r;
}

static int b64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int svff_base64_decode(const char *in, char **ret, size_t *ret_len) {
        size_t len = in ? strlen(in) : 0, n = 0;
        char *out;

        if (!in || len % 4 != 0)
                return -EINVAL;
        out = malloc(len / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 4) {
                int v[4];
                bool last = i + 4 == len;

                for (size_t k = 0; k < 4; k++)
                        v[k] = b64_value(in[i + k]);
                /* '=' only at the end: "xx==" or "xxx=" */
                if (v[0] < 0 || v[1] < 0 ||
                    (v[2] < 0 && !(last && in[i + 2] == '=' && in[i + 3] == '=')) ||
                    (v[3] < 0 && !(last && in[i + 3] == '='))) {
                        free(out);
                        return -EINVAL;
                }
                out[n++] = (char) (v[0] << 2 | v[1] >> 4);
                if (v[2] >= 0)
                        out[n++] = (char) ((v[1] & 0xf) << 4 | v[2] >> 2);
                if (v[2] >= 0 && v[3] >= 0)
                        out[n++] = (char) ((v[2] & 0x3) << 6 | v[3]);
        }
        out[n] = 0;
        *ret = out;
        *ret_len = n;
        return 0;
}

/* name is a head's: nvme<N>n<N>, as the kernel names a multipath head. */
static bool head_name_ok(const char *name, size_t len) {
        size_t i = 4, digits;

        if (len >= SVFF_GA_HEAD_MAX || len < 7 || strncmp(name, "nvme", 4) != 0)
                return false;
        for (digits = 0; i < len && name[i] >= '0' && name[i] <= '9'; i++)
                digits++;
        if (digits == 0 || i >= len || name[i++] != 'n')
                return false;
        for (digits = 0; i < len && name[i] >= '0' && name[i] <= '9'; i++)
                digits++;
        return digits > 0 && i == len;
}

bool svff_ga_nqn_ok(const char *s, size_t n) {
        if (n < 1 || n >= SVFF_GA_NQN_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] < 0x20 || s[i] > 0x7e)
                        return false;
        return true;
}

/* A decimal count of at most 10 digits at *p, up to a space or the
 * end: advances *p past it. */
static bool parse_u32(const char **p, const char *end, uint32_t *ret) {
        unsigned long long v = 0;
        const char *s = *p;

        for (; *p < end && **p != ' '; (*p)++) {
                if (**p < '0' || **p > '9' || *p - s >= 10)
                        return false;
                v = v * 10 + (unsigned) (**p - '0');
        }
        if (*p == s || v > UINT32_MAX)
                return false;
        *ret = (uint32_t) v;
        return true;
}

/* One line "/sys/block/NAME/delayed_removal_secs VALUE [NSID NQN]",
 * checked. An NSID or NQN the guest could not read (0, "-"), or that is
 * not one, leaves that field unknown. */
static bool parse_line(const char *line, size_t len, struct svff_ga_head *ret) {
        static const char prefix[] = "/sys/block/", suffix[] = "/delayed_removal_secs ";
        const char *name, *end, *value, *nqn, *eol = line + len;
        uint32_t v, nsid = 0;

        if (len <= sizeof(prefix) - 1 || strncmp(line, prefix, sizeof(prefix) - 1) != 0)
                return false;
        name = line + sizeof(prefix) - 1;
        end = memchr(name, '/', len - (size_t) (name - line));
        if (!end || !head_name_ok(name, (size_t) (end - name)))
                return false;
        if ((size_t) (line + len - end) <= sizeof(suffix) - 1 || strncmp(end, suffix, sizeof(suffix) - 1) != 0)
                return false;
        value = end + sizeof(suffix) - 1;
        if (!parse_u32(&value, eol, &v))
                return false;
        *ret = (struct svff_ga_head) { .delayed_removal_sec = v };
        memcpy(ret->name, name, (size_t) (end - name));
        ret->name[end - name] = 0;
        if (value == eol)
                return true;
        value++;
        if (!parse_u32(&value, eol, &nsid) || value == eol)
                return true;
        ret->nsid = nsid;
        nqn = value + 1;
        if (!svff_ga_nqn_ok(nqn, (size_t) (eol - nqn)) || (eol - nqn == 1 && *nqn == '-'))
                return true;
        memcpy(ret->subnqn, nqn, (size_t) (eol - nqn));
        ret->subnqn[eol - nqn] = 0;
        return true;
}

/* One command's "return" object (a new reference). */
static int run(svff_ga_command_fn command, void *userdata, struct json_object *cmd, int timeout_sec,
               struct json_object **ret, struct svff_error *err) {
        _cleanup_free_ char *reply = NULL;
        struct json_object *doc, *v;
        int r;

        r = command(userdata, json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN), timeout_sec, &reply, err);
        if (r < 0)
                return r;
        if (!reply || svff_json_parse(reply, strlen(reply), 16, &doc, NULL) < 0)
                doc = NULL;
        if (!doc || !json_object_object_get_ex(doc, "return", &v) || !json_object_is_type(v, json_type_object)) {
                json_object_put(doc);
                return svff_error_set(err, -EPROTO, "The guest agent's reply is not one");
        }
        *ret = json_object_get(v);
        json_object_put(doc);
        return 0;
}

static int heads_from_output(const char *out, size_t len, struct svff_ga_head **ret, size_t *ret_n) {
        struct svff_ga_head *heads = NULL;
        size_t n = 0;

        for (const char *p = out, *e; p < out + len && n < SVFF_GA_HEADS_MAX; p = e + 1) {
                struct svff_ga_head h;

                e = memchr(p, '\n', (size_t) (out + len - p));
                if (!e)
                        e = out + len;
                if (!parse_line(p, (size_t) (e - p), &h))
                        continue;
                if (!heads && !(heads = calloc(SVFF_GA_HEADS_MAX, sizeof(*heads))))
                        return -ENOMEM;
                heads[n++] = h;
        }
        *ret = heads;
        *ret_n = n;
        return 0;
}

int svff_ga_nvme_heads(svff_ga_command_fn command, void *userdata, usec_t timeout, struct svff_ga_head **ret,
                       size_t *ret_n, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *exec = NULL, *started = NULL;
        usec_t deadline = svff_now_usec() + timeout;
        int timeout_sec = (int) ((timeout + USEC_PER_SEC - 1) / USEC_PER_SEC);
        int64_t pid;
        int r;

        exec = json_object_new_object();
        {
                struct json_object *args = json_object_new_object(), *argv = json_object_new_array();

                if (!exec || !args || !argv) {
                        json_object_put(args);
                        json_object_put(argv);
                        return -ENOMEM;
                }
                json_object_object_add(exec, "execute", json_object_new_string("guest-exec"));
                json_object_array_add(argv, json_object_new_string("-c"));
                json_object_array_add(argv, json_object_new_string(ga_list_heads));
                json_object_object_add(args, "path", json_object_new_string("/bin/sh"));
                json_object_object_add(args, "arg", argv);
                json_object_object_add(args, "capture-output", json_object_new_boolean(true));
                json_object_object_add(exec, "arguments", args);
        }
        r = run(command, userdata, exec, timeout_sec, &started, err);
        if (r < 0)
                return r;
        if (svff_json_get_i64(started, "pid", &pid) < 0)
                return svff_error_set(err, -EPROTO, "The guest agent's guest-exec gave no pid");

        for (;;) {
                _cleanup_(json_object_putp) struct json_object *status = NULL, *cmd = NULL;
                _cleanup_free_ char *out = NULL;
                const char *data = NULL;
                bool exited = false, truncated = false;
                int64_t code = -1;
                size_t len = 0;
                usec_t now = svff_now_usec();

                if (now >= deadline)
                        return svff_error_set(err, -ETIMEDOUT, "The guest's shell did not end within %llu ms",
                                              (unsigned long long) (timeout / USEC_PER_MSEC));
                cmd = json_object_new_object();
                if (!cmd)
                        return -ENOMEM;
                json_object_object_add(cmd, "execute", json_object_new_string("guest-exec-status"));
                {
                        struct json_object *args = json_object_new_object();

                        if (!args)
                                return -ENOMEM;
                        json_object_object_add(args, "pid", json_object_new_int64(pid));
                        json_object_object_add(cmd, "arguments", args);
                }
                /* whole seconds, as libvirt takes them: never past the
                 * deadline by more than the last one's rest */
                r = run(command, userdata, cmd, (int) ((deadline - now) / USEC_PER_SEC) ?: 1, &status, err);
                if (r < 0)
                        return r;
                if (svff_json_get_bool(status, "exited", &exited) < 0)
                        return svff_error_set(err, -EPROTO, "The guest agent's guest-exec-status says nothing of 'exited'");
                if (!exited) {
                        struct timespec ts = { 0, GA_POLL_MSEC * 1000000L };

                        nanosleep(&ts, NULL);
                        continue;
                }
                (void) svff_json_get_i64(status, "exitcode", &code);
                if (code != 0)
                        return svff_error_set(err, -EIO, "The guest's shell exited %lld", (long long) code);
                if (svff_json_get_bool(status, "out-truncated", &truncated) >= 0 && truncated)
                        return svff_error_set(err, -EPROTO, "The guest agent cut the shell's output short");
                /* no output at all: no head; anything else but a string is not the agent's */
                if (!json_object_object_get_ex(status, "out-data", NULL)) {
                        *ret = NULL;
                        *ret_n = 0;
                        return 0;
                }
                if (svff_json_get_string(status, "out-data", &data) < 0 || !data)
                        return svff_error_set(err, -EPROTO, "The guest agent's out-data is not a string");
                if (strlen(data) > GA_OUTPUT_MAX / 3 * 4 || svff_base64_decode(data, &out, &len) < 0)
                        return svff_error_set(err, -EPROTO, "The guest agent's out-data is not base64 of at most %u bytes",
                                              GA_OUTPUT_MAX);
                return heads_from_output(out, len, ret, ret_n);
        }
}

int svff_ga_pick_head(const struct svff_ga_head *heads, size_t n, const char *subnqn, uint32_t nsid) {
        int best = -1;

        for (size_t i = 0; i < n && i < INT_MAX; i++) {
                if (subnqn && (heads[i].nsid != nsid || !streq(heads[i].subnqn, subnqn)))
                        continue;
                if (best < 0 || heads[i].delayed_removal_sec < heads[best].delayed_removal_sec)
                        best = (int) i;
        }
        return best;
}

int svff_ga_libvirt_command(void *dom, const char *command, int timeout_sec, char **ret_reply,
                            struct svff_error *err) {
        char *reply = virDomainQemuAgentCommand(dom, command, timeout_sec > 0 ? timeout_sec : 1, 0);
        _cleanup_free_ char *why = NULL, *cut = NULL;
        char buf[161];

        if (reply) {
                *ret_reply = reply;
                return 0;
        }
        /* libvirt's message may quote the agent's, which is the guest's
         * text: escaped, and cut at a character. */
        why = svff_utf8_escape(virGetLastErrorMessage(), false);
        snprintf(buf, sizeof(buf), "%s", why ?: "libvirt gave no reason");
        if (svff_utf8_make_valid(buf, strlen(buf), true, &cut, NULL) < 0)
                return -ENOMEM;
        return svff_error_set(err, -EIO, "%s", cut);
}
