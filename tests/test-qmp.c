/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The direct QMP client against a real QEMU (q35, stopped, one PCIe root
 * port with ACPI hotplug off so device_del completes without a guest):
 * handshake and query-commands, device_add/device_del of an emulated NIC
 * with DEVICE_DELETED awaited, error replies, QEMU killed mid-command.
 * The native device-pause path runs against a scripted QMP peer: a
 * STAND-IN for the SVFF QEMU patch, which no public QEMU carries. */

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json-util.h"
#include "qmp.h"

#define TIMEOUT (5 * USEC_PER_SEC)

static char dir[] = "/tmp/svff-qmp.XXXXXX";
static char sock[100];
static pid_t qemu = -1;

static const char *qemu_binary(void) {
        static const char *const c[] = { "/usr/bin/qemu-system-x86_64", "/usr/local/bin/qemu-system-x86_64" };

        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                if (access(c[i], X_OK) == 0)
                        return c[i];
        return NULL;
}

static void msleep(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

static void qemu_start(void) {
        char qmparg[160];
        struct stat st;

        snprintf(sock, sizeof(sock), "%s/qmp.sock", dir);
        unlink(sock);
        snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", sock);
        qemu = fork();
        ck_assert_int_ge(qemu, 0);
        if (qemu == 0) {
                execl(qemu_binary(), "qemu-system-x86_64", "-M", "q35", "-S", "-nodefaults", "-display", "none",
                      "-accel", "tcg", "-m", "64", "-device", "pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1",
                      "-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off", "-qmp", qmparg, NULL);
                _exit(127);
        }
        for (int i = 0; i < 200 && stat(sock, &st) < 0; i++)
                msleep(25);
        ck_assert_msg(stat(sock, &st) == 0, "QEMU did not create its QMP socket");
}

/* QEMU is our child: reap it ourselves, never leave it to init. */
static void qemu_stop(void) {
        if (qemu > 0) {
                kill(qemu, SIGKILL);
                waitpid(qemu, NULL, 0);
        }
        qemu = -1;
}

static struct svff_qmp *connect_qemu(void) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_qmp *q = NULL;
        int r;

        /* QEMU creates the socket file at bind(), before listen(): a
         * connect in between is refused. Give a loaded machine 5 s. */
        for (int i = 0; i < 200; i++) {
                r = svff_qmp_connect(sock, TIMEOUT, &q, &err);
                if (r != -ECONNREFUSED)
                        break;
                svff_error_free(&err);
                msleep(25);
        }
        ck_assert_msg(r == 0, "connect: %s", svff_error_message(&err));
        svff_error_free(&err);
        return q;
}

START_TEST(test_handshake) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        int64_t major = 0;

        qemu_start();
        q = connect_qemu();
        ck_assert_ptr_nonnull(svff_qmp_version(q));
        ck_assert_int_eq(svff_json_get_i64(svff_qmp_version(q), "major", &major), 0);
        ck_assert_int_ge(major, 2);
        ck_assert_int_eq(svff_qmp_has_command(q, "device_add", TIMEOUT, &err), 1);
        ck_assert_int_eq(svff_qmp_has_command(q, "device_del", TIMEOUT, &err), 1);
        /* Stock QEMU: no device pause, and asking for it does nothing. */
        ck_assert_int_eq(svff_qmp_has_command(q, "x-svff-device-pause", TIMEOUT, &err), 0);
        ck_assert_int_eq(svff_qmp_device_pause(q, "x-svff-device-pause", "nic0", TIMEOUT, &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "does not offer"));
        svff_error_free(&err);
        qemu_stop();
}
END_TEST

/* Whether QEMU has a device with that id (the stopped machine has no
 * firmware to number the root port's bus, so query-pci cannot see
 * behind it; the QOM tree can). */
static bool device_exists(struct svff_qmp *q, const char *id) {
        _cleanup_(json_object_putp) struct json_object *ret = NULL, *args = json_object_new_object();
        const char *name;

        json_object_object_add(args, "path", json_object_new_string("/machine/peripheral"));
        ck_assert_int_eq(svff_qmp_execute(q, "qom-list", args, TIMEOUT, &ret, NULL), 0);
        for (size_t i = 0; i < json_object_array_length(ret); i++)
                if (svff_json_get_string(json_object_array_get_idx(ret, i), "name", &name) == 0 && streq(name, id))
                        return true;
        return false;
}

START_TEST(test_device_add_del) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        _cleanup_(json_object_putp) struct json_object *args = NULL, *ev = NULL, *del = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *data;
        const char *dev;
        int r;

        qemu_start();
        q = connect_qemu();
        args = json_object_new_object();
        json_object_object_add(args, "driver", json_object_new_string("e1000e"));
        json_object_object_add(args, "id", json_object_new_string("nic1"));
        json_object_object_add(args, "bus", json_object_new_string("rp1"));
        r = svff_qmp_execute(q, "device_add", args, TIMEOUT, NULL, &err);
        ck_assert_msg(r == 0, "device_add: %s", svff_error_message(&err));
        ck_assert(device_exists(q, "nic1"));

        del = json_object_new_object();
        json_object_object_add(del, "id", json_object_new_string("nic1"));
        r = svff_qmp_execute(q, "device_del", del, TIMEOUT, NULL, &err);
        ck_assert_msg(r == 0, "device_del: %s", svff_error_message(&err));
        r = svff_qmp_wait_event(q, "DEVICE_DELETED", "device", "nic1", TIMEOUT, &ev, &err);
        ck_assert_msg(r == 0, "DEVICE_DELETED: %s", svff_error_message(&err));
        ck_assert(json_object_object_get_ex(ev, "data", &data));
        ck_assert_int_eq(svff_json_get_string(data, "device", &dev), 0);
        ck_assert_str_eq(dev, "nic1");
        ck_assert(!device_exists(q, "nic1"));
        svff_error_free(&err);
        qemu_stop();
}
END_TEST

START_TEST(test_errors) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        _cleanup_(json_object_putp) struct json_object *args = json_object_new_object(), *bad = json_object_new_object();
        struct svff_error err = SVFF_ERROR_NULL;

        qemu_start();
        q = connect_qemu();
        ck_assert_int_eq(svff_qmp_execute(q, "no-such-command", NULL, TIMEOUT, NULL, &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "CommandNotFound"));
        svff_error_free(&err);

        json_object_object_add(args, "id", json_object_new_string("nope"));
        ck_assert_int_eq(svff_qmp_execute(q, "device_del", args, TIMEOUT, NULL, &err), -ENODEV);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "nope"));
        svff_error_free(&err);

        json_object_object_add(bad, "driver", json_object_new_string("no-such-driver"));
        ck_assert_int_eq(svff_qmp_execute(q, "device_add", bad, TIMEOUT, NULL, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "GenericError"));
        svff_error_free(&err);

        /* Still usable after errors. */
        ck_assert_int_eq(svff_qmp_execute(q, "query-status", NULL, TIMEOUT, NULL, &err), 0);
        qemu_stop();
}
END_TEST

static void *kill_later(void *p) {
        msleep(200);
        kill(*(pid_t *) p, SIGKILL);
        return NULL;
}

START_TEST(test_killed_mid_command) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        pthread_t t;
        usec_t t0;
        int r;

        qemu_start();
        q = connect_qemu();
        /* Frozen, QEMU cannot answer: the command is in flight when it dies. */
        kill(qemu, SIGSTOP);
        ck_assert_int_eq(pthread_create(&t, NULL, kill_later, &qemu), 0);
        t0 = svff_now_usec();
        r = svff_qmp_execute(q, "query-status", NULL, TIMEOUT, NULL, &err);
        pthread_join(t, NULL);
        ck_assert_int_eq(r, -ECONNRESET);
        ck_assert_msg(strstr(svff_error_message(&err), "QEMU"), "message: %s", svff_error_message(&err));
        ck_assert_uint_lt(svff_now_usec() - t0, TIMEOUT);
        svff_error_free(&err);
        waitpid(qemu, NULL, 0);
        qemu = -1;
        /* And the next command fails at once, no hang. */
        ck_assert_int_lt(svff_qmp_execute(q, "query-status", NULL, TIMEOUT, NULL, &err), 0);
        svff_error_free(&err);
}
END_TEST

/* ---- the scripted stand-in for a QEMU with the SVFF device pause ---- */

struct peer {
        int listen_fd;
        char paused_id[64];
        char unpaused_id[64];
};

static void peer_send(FILE *f, const char *json) {
        fprintf(f, "%s\r\n", json);
        fflush(f);
}

static void *peer_run(void *userdata) {
        struct peer *p = userdata;
        int fd = accept(p->listen_fd, NULL, NULL);
        FILE *f;
        char *line = NULL;
        size_t n = 0;

        if (fd < 0)
                return NULL;
        f = fdopen(fd, "r+");
        peer_send(f, "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}, "
                     "\"package\": \"svff-stand-in\"}, \"capabilities\": []}}");
        while (getline(&line, &n, f) > 0) {
                struct json_object *m = json_tokener_parse(line), *args, *idv;
                const char *cmd = "", *id = NULL, *dev = NULL;
                char reply[512];

                if (!m)
                        break;
                (void) svff_json_get_string(m, "execute", &cmd);
                if (json_object_object_get_ex(m, "id", &idv))
                        id = json_object_get_string(idv);
                if (json_object_object_get_ex(m, "arguments", &args))
                        (void) svff_json_get_string(args, "id", &dev);
                /* An unsolicited event first: the client must queue it. */
                peer_send(f, "{\"event\": \"RTC_CHANGE\", \"data\": {\"offset\": 0}, "
                             "\"timestamp\": {\"seconds\": 1, \"microseconds\": 0}}");
                if (streq(cmd, "qmp_capabilities"))
                        snprintf(reply, sizeof(reply), "{\"return\": {}, \"id\": \"%s\"}", id);
                else if (streq(cmd, "query-commands"))
                        snprintf(reply, sizeof(reply),
                                 "{\"return\": [{\"name\": \"query-commands\"}, {\"name\": \"x-svff-device-pause\"}, "
                                 "{\"name\": \"x-svff-device-unpause\"}], \"id\": \"%s\"}", id);
                else if (streq(cmd, "x-svff-device-pause") && dev) {
                        snprintf(p->paused_id, sizeof(p->paused_id), "%s", dev);
                        snprintf(reply, sizeof(reply), "{\"return\": {}, \"id\": \"%s\"}", id);
                } else if (streq(cmd, "x-svff-device-unpause") && dev && streq(dev, p->paused_id)) {
                        snprintf(p->unpaused_id, sizeof(p->unpaused_id), "%s", dev);
                        snprintf(reply, sizeof(reply), "{\"return\": {}, \"id\": \"%s\"}", id);
                } else if (streq(cmd, "x-svff-device-unpause"))
                        snprintf(reply, sizeof(reply),
                                 "{\"error\": {\"class\": \"DeviceNotFound\", \"desc\": \"Device '%s' is not paused\"}, "
                                 "\"id\": \"%s\"}", strna(dev), id);
                else
                        snprintf(reply, sizeof(reply),
                                 "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command %s has not been found\"}, "
                                 "\"id\": \"%s\"}", cmd, id);
                json_object_put(m);
                peer_send(f, reply);
        }
        free(line);
        fclose(f);
        return NULL;
}

START_TEST(test_native_pause_stand_in) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        _cleanup_(json_object_putp) struct json_object *ev = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct svff_error err = SVFF_ERROR_NULL;
        struct peer p = {};
        pthread_t t;
        const char *name;

        snprintf(sock, sizeof(sock), "%s/stand-in.sock", dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        p.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(p.listen_fd, 0);
        ck_assert_int_eq(bind(p.listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(p.listen_fd, 1), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, peer_run, &p), 0);

        q = connect_qemu();
        ck_assert_int_eq(svff_qmp_device_pause(q, "x-svff-device-pause", "ua-svff-0000-01-00-4", TIMEOUT, &err), 0);
        ck_assert_str_eq(p.paused_id, "ua-svff-0000-01-00-4");
        ck_assert_int_eq(svff_qmp_device_pause(q, "x-svff-device-unpause", "ua-other", TIMEOUT, &err), -ENODEV);
        svff_error_free(&err);
        ck_assert_int_eq(svff_qmp_device_pause(q, "x-svff-device-unpause", "ua-svff-0000-01-00-4", TIMEOUT, &err), 0);
        ck_assert_str_eq(p.unpaused_id, "ua-svff-0000-01-00-4");
        /* The events that arrived between replies were kept. */
        ck_assert_int_eq(svff_qmp_next_event(q, TIMEOUT, &ev, &err), 0);
        ck_assert_int_eq(svff_json_get_string(ev, "event", &name), 0);
        ck_assert_str_eq(name, "RTC_CHANGE");

        svff_qmp_free(TAKE_PTR(q));
        pthread_join(t, NULL);
        close(p.listen_fd);
        svff_error_free(&err);
}
END_TEST

int main(void) {
        Suite *s = suite_create("qmp");
        TCase *tc = tcase_create("qemu");
        SRunner *sr;
        int failed;

        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return 1;
        }
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_native_pause_stand_in);
        if (qemu_binary()) {
                tcase_add_test(tc, test_handshake);
                tcase_add_test(tc, test_device_add_del);
                tcase_add_test(tc, test_errors);
                tcase_add_test(tc, test_killed_mid_command);
        } else
                printf("# qemu-system-x86_64 not installed: only the scripted stand-in runs\n");
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        /* One process: QEMU stays our child and is reaped by us. */
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        qemu_stop();
        unlink(sock);
        {
                char p[300];

                snprintf(p, sizeof(p), "%s/qmp.sock", dir);
                unlink(p);
                snprintf(p, sizeof(p), "%s/stand-in.sock", dir);
                unlink(p);
        }
        rmdir(dir);
        return failed ? 1 : 0;
}
