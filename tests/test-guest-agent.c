/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read of a guest's NVMe heads through the QEMU guest agent, against
 * a scripted agent: a STAND-IN for qemu-ga inside a guest, which answers
 * guest-exec and guest-exec-status as qemu-ga's qga/commands-posix.c does
 * (a pid, then "exited" false until the process ends, then its exit code
 * and base64 out-data). The real agent in a real guest is the VM tier's
 * (tests/vm/scenarios/12-guests.sh). Also: the channel in a domain's
 * live XML, and the base64 decoder. */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest-agent.h"
#include "json-util.h"
#include "macro.h"

struct agent {
        const char *output;             /* the shell's stdout, or NULL for none */
        int exitcode;
        unsigned running;               /* guest-exec-status calls that say "not yet" */
        bool never_exits;
        const char *raw;                /* a reply given to every command as is */
        const char *status_raw;         /* a reply given to guest-exec-status as is */
        int fail;                       /* the transport fails with this */
        unsigned calls;
        char first[4096];               /* the first command */
        bool other;                     /* a command that is neither of the two */
};

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *encode(const char *s) {
        size_t n = strlen(s), k = 0;
        char *out = malloc((n + 2) / 3 * 4 + 1);

        ck_assert_ptr_nonnull(out);
        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned char) s[i] << 16 | (i + 1 < n ? (unsigned char) s[i + 1] << 8 : 0) |
                             (i + 2 < n ? (unsigned char) s[i + 2] : 0);

                out[k++] = b64[v >> 18 & 63];
                out[k++] = b64[v >> 12 & 63];
                out[k++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
                out[k++] = i + 2 < n ? b64[v & 63] : '=';
        }
        out[k] = 0;
        return out;
}

static int agent_command(void *userdata, const char *command, int timeout_sec, char **ret_reply,
                         struct svff_error *err) {
        struct agent *a = userdata;
        struct json_object *cmd = json_tokener_parse(command), *v;
        const char *what = NULL;
        char *reply = NULL;

        ck_assert_ptr_nonnull(cmd);
        ck_assert_int_gt(timeout_sec, 0);
        if (a->calls++ == 0)
                snprintf(a->first, sizeof(a->first), "%s", command);
        if (a->fail) {
                json_object_put(cmd);
                return svff_error_set(err, a->fail, "the agent is not connected");
        }
        ck_assert(json_object_object_get_ex(cmd, "execute", &v));
        what = json_object_get_string(v);
        if (a->raw)
                reply = strdup(a->raw);
        else if (streq(what, "guest-exec"))
                reply = strdup("{\"return\": {\"pid\": 4242}}");
        else if (streq(what, "guest-exec-status") && a->status_raw)
                reply = strdup(a->status_raw);
        else if (streq(what, "guest-exec-status")) {
                int64_t pid = 0;

                ck_assert(json_object_object_get_ex(cmd, "arguments", &v));
                ck_assert_int_eq(svff_json_get_i64(v, "pid", &pid), 0);
                ck_assert_int_eq(pid, 4242);
                if (a->never_exits || a->running > 0) {
                        if (a->running > 0)
                                a->running--;
                        reply = strdup("{\"return\": {\"exited\": false}}");
                } else if (a->output) {
                        _cleanup_free_ char *data = encode(a->output);

                        ck_assert_int_ge(asprintf(&reply, "{\"return\": {\"exited\": true, \"exitcode\": %d, "
                                                  "\"out-data\": \"%s\"}}", a->exitcode, data), 0);
                } else
                        ck_assert_int_ge(asprintf(&reply, "{\"return\": {\"exited\": true, \"exitcode\": %d}}",
                                                  a->exitcode), 0);
        } else {
                a->other = true;
                reply = strdup("{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"no\"}}");
        }
        json_object_put(cmd);
        ck_assert_ptr_nonnull(reply);
        *ret_reply = reply;
        return 0;
}

static int heads(struct agent *a, struct svff_ga_head **ret, size_t *n, struct svff_error *err) {
        return svff_ga_nvme_heads(agent_command, a, 2 * USEC_PER_SEC, ret, n, err);
}

START_TEST(test_base64) {
        static const struct {
                const char *in, *out;
        } good[] = { { "", "" }, { "Zg==", "f" }, { "Zm8=", "fo" }, { "Zm9v", "foo" }, { "Zm9vYmFy", "foobar" },
                     { "AP8=", "\x00\xff" } };
        static const char *const bad[] = { "Zg=", "Z===", "Zm9v!A==", "=Zg=", "Zg==Zg==", "Zm9", "Zm\n9v" };
        size_t len;
        char *out;

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                ck_assert_int_eq(svff_base64_decode(good[i].in, &out, &len), 0);
                ck_assert_uint_eq(len, i == ELEMENTSOF(good) - 1 ? 2 : strlen(good[i].out));
                ck_assert(memcmp(out, good[i].out, len) == 0);
                ck_assert_int_eq(out[len], 0);
                free(out);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(svff_base64_decode(bad[i], &out, &len) == -EINVAL, "'%s' decoded", bad[i]);
}
END_TEST

/* The channel as libvirt's live XML shows it: the agent connected or not. */
START_TEST(test_channel_in_xml) {
        static const char fmt[] =
                "<domain type='qemu'><name>g1</name><devices>"
                "<channel type='unix'><source mode='bind' path='/run/g1.agent'/>"
                "<target type='virtio' name='%s'%s/><address type='virtio-serial' controller='0' bus='0' port='1'/>"
                "</channel></devices></domain>";
        char xml[512];

        snprintf(xml, sizeof(xml), fmt, "org.qemu.guest_agent.0", " state='connected'");
        ck_assert_int_eq(svff_ga_connected_in_xml(xml), 1);
        snprintf(xml, sizeof(xml), fmt, "org.qemu.guest_agent.0", " state='disconnected'");
        ck_assert_int_eq(svff_ga_connected_in_xml(xml), 0);
        snprintf(xml, sizeof(xml), fmt, "org.qemu.guest_agent.0", "");
        ck_assert_int_eq(svff_ga_connected_in_xml(xml), 0);
        snprintf(xml, sizeof(xml), fmt, "com.example.other.0", " state='connected'");
        ck_assert_int_eq(svff_ga_connected_in_xml(xml), 0);
        ck_assert_int_eq(svff_ga_connected_in_xml("<domain><devices/></domain>"), 0);
        ck_assert_int_eq(svff_ga_connected_in_xml("<domain"), -EINVAL);
}
END_TEST

/* Two heads, one read after the shell ran a while; a path node and the
 * rest of the shell's output are not heads. Only the two read-only
 * commands are sent, the first a guest-exec of /bin/sh with its output
 * captured. */
START_TEST(test_heads) {
        struct agent a = {
                .output = "/sys/block/nvme0n1/delayed_removal_secs 60 1 nqn.2019-08.org.qemu:svffnvme0\n"
                          "/sys/block/nvme1n2/delayed_removal_secs 0 0 -\n",
                .running = 3,
        };
        _cleanup_free_ struct svff_ga_head *h = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *first, *args, *v;
        size_t n = 0;

        ck_assert_msg(heads(&a, &h, &n, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(h[0].name, "nvme0n1");
        ck_assert_uint_eq(h[0].delayed_removal_sec, 60);
        ck_assert_uint_eq(h[0].nsid, 1);
        ck_assert_str_eq(h[0].subnqn, "nqn.2019-08.org.qemu:svffnvme0");
        ck_assert_str_eq(h[1].name, "nvme1n2");
        ck_assert_uint_eq(h[1].delayed_removal_sec, 0);
        ck_assert_uint_eq(h[1].nsid, 0);
        ck_assert_str_eq(h[1].subnqn, "");
        ck_assert_uint_eq(a.calls, 1 + 4);
        ck_assert(!a.other);

        first = json_tokener_parse(a.first);
        ck_assert_ptr_nonnull(first);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(first, "execute")), "guest-exec");
        args = json_object_object_get(first, "arguments");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(args, "path")), "/bin/sh");
        ck_assert(json_object_get_boolean(json_object_object_get(args, "capture-output")));
        v = json_object_object_get(args, "arg");
        ck_assert_uint_eq(json_object_array_length(v), 2);
        ck_assert_ptr_nonnull(strstr(json_object_get_string(json_object_array_get_idx(v, 1)),
                                     "/sys/block/nvme*/delayed_removal_secs"));
        ck_assert(!json_object_object_get_ex(args, "input-data", NULL));
        json_object_put(first);
}
END_TEST

/* The guest's text is checked line by line: what is not a head's line
 * (a path outside /sys/block, a name that is no head's, a value that is
 * no count or too big, control characters) is dropped, the rest kept. */
START_TEST(test_hostile_output) {
        struct agent a = {
                .output = "/sys/block/nvme0n1/delayed_removal_secs 30\n"
                          "/sys/block/../../etc/delayed_removal_secs 5\n"
                          "/sys/block/nvme0c0n1/delayed_removal_secs 5\n"
                          "/sys/block/nvme0n1x/delayed_removal_secs 5\n"
                          "/sys/block/sda/delayed_removal_secs 5\n"
                          "/sys/block/nvme2n1/delayed_removal_secs 4294967296\n"
                          "/sys/block/nvme2n1/delayed_removal_secs -1\n"
                          "/sys/block/nvme2n1/delayed_removal_secs 5\x1b[31m\n"
                          "/sys/block/nvme\x1b[2Jn1/delayed_removal_secs 5\n"
                          "/sys/block/nvme3n1/delayed_removal_secs \n"
                          "/sys/block/nvme123456789012345678901234567890n1/delayed_removal_secs 5\n"
                          "garbage\n"
                          "/sys/block/nvme5n1/delayed_removal_secs 7 2 nqn.x\x1b[2J\n"
                          "/sys/block/nvme6n1/delayed_removal_secs 8 99999999999 nqn.y\n"
                          "/sys/block/nvme7n1/delayed_removal_secs 9 3 nqn.with space  \n"
                          "/sys/block/nvme4n4/delayed_removal_secs 4294967295",
        };
        _cleanup_free_ struct svff_ga_head *h = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 0;

        ck_assert_msg(heads(&a, &h, &n, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_uint_eq(n, 5);
        ck_assert_str_eq(h[0].name, "nvme0n1");
        ck_assert_uint_eq(h[0].delayed_removal_sec, 30);
        /* a head whose NSID or NQN is no such thing: kept, with what
         * cannot be trusted left unknown */
        ck_assert_str_eq(h[1].name, "nvme5n1");
        ck_assert_uint_eq(h[1].nsid, 2);
        ck_assert_str_eq(h[1].subnqn, "");
        ck_assert_str_eq(h[2].name, "nvme6n1");
        ck_assert_uint_eq(h[2].nsid, 0);
        ck_assert_str_eq(h[2].subnqn, "");
        /* spaces are ASCII: Linux pads the serial and model of an NQN
         * it makes up for a controller without one */
        ck_assert_str_eq(h[3].name, "nvme7n1");
        ck_assert_uint_eq(h[3].nsid, 3);
        ck_assert_str_eq(h[3].subnqn, "nqn.with space  ");
        ck_assert_str_eq(h[4].name, "nvme4n4");
        ck_assert_uint_eq(h[4].delayed_removal_sec, 4294967295u);
}
END_TEST

/* The head of the VF's namespace is the one whose subsystem NQN and
 * NSID svff recorded, whatever the guest's other NVMe disks keep; with
 * none recorded every head counts. */
START_TEST(test_pick_head) {
        static const struct svff_ga_head h[] = {
                { .name = "nvme0n1", .delayed_removal_sec = 0, .nsid = 1, .subnqn = "nqn.local:disk" },
                { .name = "nvme1n1", .delayed_removal_sec = 60, .nsid = 1, .subnqn = "nqn.vf:pf" },
                { .name = "nvme1n2", .delayed_removal_sec = 30, .nsid = 2, .subnqn = "nqn.vf:pf" },
                { .name = "nvme2n1", .delayed_removal_sec = 5, .nsid = 1, .subnqn = "" },
        };

        ck_assert_int_eq(svff_ga_pick_head(h, ELEMENTSOF(h), "nqn.vf:pf", 1), 1);
        ck_assert_int_eq(svff_ga_pick_head(h, ELEMENTSOF(h), "nqn.vf:pf", 2), 2);
        ck_assert_int_eq(svff_ga_pick_head(h, ELEMENTSOF(h), "nqn.vf:pf", 3), -1);
        ck_assert_int_eq(svff_ga_pick_head(h, ELEMENTSOF(h), "nqn.other", 1), -1);
        ck_assert_int_eq(svff_ga_pick_head(h, ELEMENTSOF(h), NULL, 0), 0);
        ck_assert_int_eq(svff_ga_pick_head(h, 0, NULL, 0), -1);
}
END_TEST

/* No head (Linux < 6.16, multipath off, or no NVMe disk): none, and no
 * error. */
START_TEST(test_no_head) {
        struct agent a = { .output = NULL };
        struct svff_ga_head *h = (void *) 1;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 7;

        ck_assert_int_eq(heads(&a, &h, &n, &err), 0);
        ck_assert_ptr_null(h);
        ck_assert_uint_eq(n, 0);
        a = (struct agent) { .output = "nothing here\n" };
        ck_assert_int_eq(heads(&a, &h, &n, &err), 0);
        ck_assert_ptr_null(h);
        ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_failures) {
        struct svff_ga_head *h = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 0;
        struct agent a;

        a = (struct agent) { .output = "", .exitcode = 127 };
        ck_assert_int_eq(heads(&a, &h, &n, &err), -EIO);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "exited 127"));
        svff_error_free(&err);

        a = (struct agent) { .never_exits = true };
        ck_assert_int_eq(svff_ga_nvme_heads(agent_command, &a, 300 * USEC_PER_MSEC, &h, &n, &err), -ETIMEDOUT);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "did not end within 300 ms"));
        svff_error_free(&err);

        a = (struct agent) { .raw = "not json" };
        ck_assert_int_eq(heads(&a, &h, &n, &err), -EPROTO);
        svff_error_free(&err);
        a = (struct agent) { .raw = "{\"error\": {\"class\": \"GenericError\", \"desc\": \"guest-exec is disabled\"}}" };
        ck_assert_int_eq(heads(&a, &h, &n, &err), -EPROTO);
        svff_error_free(&err);
        a = (struct agent) { .raw = "{\"return\": {}}" };
        ck_assert_int_eq(heads(&a, &h, &n, &err), -EPROTO);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "no pid"));
        svff_error_free(&err);

        /* a status that is not qemu-ga's: no "exited", out-data not a
         * string, output cut short */
        static const char *const statuses[] = {
                "{\"return\": {\"exitcode\": 0}}",
                "{\"return\": {\"exited\": true, \"exitcode\": 0, \"out-data\": 5}}",
                "{\"return\": {\"exited\": true, \"exitcode\": 0, \"out-data\": \"Zm9v\", \"out-truncated\": true}}",
                "{\"return\": {\"exited\": true, \"exitcode\": 0, \"out-data\": \"not base64!\"}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(statuses); i++) {
                a = (struct agent) { .status_raw = statuses[i] };
                ck_assert_msg(heads(&a, &h, &n, &err) == -EPROTO, "%s: %s", statuses[i], svff_error_message(&err));
                svff_error_free(&err);
        }

        a = (struct agent) { .fail = -EIO };
        ck_assert_int_eq(heads(&a, &h, &n, &err), -EIO);
        ck_assert_str_eq(svff_error_message(&err), "the agent is not connected");
        svff_error_free(&err);
        ck_assert_ptr_null(h);
}
END_TEST

int main(void) {
        Suite *s = suite_create("guest-agent");
        TCase *tc = tcase_create("stand-in");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_base64);
        tcase_add_test(tc, test_channel_in_xml);
        tcase_add_test(tc, test_heads);
        tcase_add_test(tc, test_hostile_output);
        tcase_add_test(tc, test_pick_head);
        tcase_add_test(tc, test_no_head);
        tcase_add_test(tc, test_failures);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
