/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svffctl: argv -> one varlink call to svffd -> a table or JSON.
 *
 * Exit codes:
 *   0  success
 *   1  svffd reported a failure (the message says which device and why)
 *   2  usage error (bad command, option or argument)
 *   3  svffd cannot be reached (no socket, connection refused or lost,
 *      a reply that is not varlink, or --timeout passed)
 *   4  permission denied (the call needs root or the admin group)
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "config-file.h"
#include "json-util.h"
#include "macro.h"
#include "pciaddr.h"
#include "reconf.h"
#include "sriov.h"
#include "table.h"
#include "varlink.h"

#define EXIT_DAEMON_ERROR 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_PERMISSION 4

#define SOCKET_DEFAULT "/run/svff/svffd.sock"  /* svffd's default, not prefix-relative */

static const char *arg_socket = NULL;
static bool arg_json = false;
static bool arg_effective = false;
static usec_t arg_timeout = 30 * USEC_PER_SEC;
static const char *arg_driver = NULL;
static bool arg_live = false;
static bool arg_config = false;
static const char *arg_guest_address = NULL;
static const char *arg_pf = NULL;
static const char *arg_mode = NULL;
static bool arg_dry_run = false;
static bool arg_force = false;
static bool arg_policy = false;

#define _cleanup_json_ _cleanup_(json_object_putp)

static const char *socket_path(void) {
        return arg_socket ?: getenv("SVFF_SOCKET") ?: SOCKET_DEFAULT;
}

static const char *jstr(struct json_object *o, const char *key) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static long long jint(struct json_object *o, const char *key, long long def) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return def;
        return (long long) json_object_get_int64(v);
}

/* ---- talking to svffd ---- */

static int connect_daemon(struct svff_varlink_client **ret) {
        int r = svff_varlink_client_connect(socket_path(), ret);

        if (r < 0) {
                fprintf(stderr, "svffctl: cannot connect to svffd at '%s': %s\n", socket_path(), strerror(-r));
                if (r == -ENOENT || r == -ECONNREFUSED)
                        fprintf(stderr, "Is svffd running? Start it with 'systemctl start svffd.socket', "
                                        "or point --socket / SVFF_SOCKET at its socket.\n");
                else if (r == -EACCES)
                        fprintf(stderr, "The socket is for root and the svff group; run as one of them.\n");
                return EXIT_UNREACHABLE;
        }
        return 0;
}

static int transport_error(int r) {
        if (r == -ETIMEDOUT)
                fprintf(stderr, "svffctl: svffd did not answer within the timeout (--timeout).\n");
        else
                fprintf(stderr, "svffctl: lost svffd at '%s': %s\n", socket_path(), strerror(-r));
        return EXIT_UNREACHABLE;
}

/* Prints a daemon error to stderr; returns the exit code for it. */
static int report_error(const char *error, struct json_object *p) {
        const char *msg = jstr(p, "message");
        const char *param = jstr(p, "parameter");
        const char *device = jstr(p, "device");

        if (msg)
                fprintf(stderr, "svffctl: %s\n", msg);
        else if (param)
                fprintf(stderr, "svffctl: %s: invalid parameter '%s'\n", error, param);
        else if (device)
                fprintf(stderr, "svffctl: %s: %s\n", error, device);
        else
                fprintf(stderr, "svffctl: %s\n", error);

        if (streq(error, "io.svff.PermissionDenied")) {
                fprintf(stderr, "Run it as root, or as a member of the admin group named in svff.conf.\n");
                return EXIT_PERMISSION;
        }
        if (streq(error, "org.varlink.service.MethodNotFound") ||
            streq(error, "org.varlink.service.InterfaceNotFound"))
                fprintf(stderr, "svffd is older than this svffctl; restart it after upgrading.\n");
        return EXIT_DAEMON_ERROR;
}

/* One call, one reply; *ret gets the parameters on success. */
static int call(const char *method, struct json_object *params, usec_t timeout, struct json_object **ret) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        _cleanup_json_ struct json_object *reply = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = connect_daemon(&c);
        if (r != 0)
                return r;
        r = svff_varlink_client_call(c, method, params, timeout, &reply, &error);
        if (r < 0)
                return transport_error(r);
        if (error)
                return report_error(error, reply);
        *ret = TAKE_PTR(reply);
        return 0;
}

static void print_json(struct json_object *o) {
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Prints a successful reply for humans; returns the exit code. */
typedef int (*reply_printer_t)(struct json_object *reply, const void *userdata);

/* One call whose reply goes to stdout: as JSON with --json, else through
 * print. params (NULL for none) is taken. Returns the exit code. */
static int call_and_print(const char *method, struct json_object *params, usec_t timeout,
                          reply_printer_t print, const void *userdata) {
        _cleanup_json_ struct json_object *p = params, *reply = NULL;
        int r;

        r = call(method, p, timeout, &reply);
        if (r != 0)
                return r;
        if (arg_json) {
                print_json(reply);
                return 0;
        }
        return print(reply, userdata);
}

/* Sends a call whose replies the caller reads from *ret: several when
 * more. Returns the exit code. */
static int call_start(const char *method, struct json_object *params, bool more,
                      struct svff_varlink_client **ret) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        int r;

        r = connect_daemon(&c);
        if (r != 0)
                return r;
        r = svff_varlink_client_send(c, method, params, more, false);
        if (r < 0)
                return transport_error(r);
        *ret = TAKE_PTR(c);
        return 0;
}

#define READ_MORE (-1)

/* Handles one reply of a call sent with call_start(): an exit code when
 * it ends the command, else READ_MORE. */
typedef int (*reply_handler_t)(struct json_object *p, const char *error, bool continues, const void *userdata);

/* Reads the replies to a call sent with call_start() until handle ends
 * the command; returns the exit code. */
static int read_replies(struct svff_varlink_client *c, reply_handler_t handle, const void *userdata) {
        for (;;) {
                _cleanup_json_ struct json_object *p = NULL;
                _cleanup_free_ char *error = NULL;
                bool continues;
                int r;

                r = svff_varlink_client_read(c, 0, &p, &error, &continues);
                if (r < 0)
                        return transport_error(r);
                r = handle(p, error, continues, userdata);
                if (r != READ_MORE)
                        return r;
        }
}

/* ---- commands ---- */

/* PFs svffd has records of that are not present: nothing is forgotten. */
static int print_absent(struct json_object *reply) {
        static const char *const h[] = { "ABSENT PF", "RECORDED", "VF RECORDS", "ASSIGNED" };
        struct json_object *absent;
        struct table *t;

        if (!json_object_object_get_ex(reply, "absent", &absent) || !absent ||
            json_object_array_length(absent) == 0)
                return 0;
        t = table_new(ELEMENTSOF(h), h);
        if (!t)
                return EXIT_FAILURE;
        for (size_t i = 0; i < json_object_array_length(absent); i++) {
                struct json_object *a = json_object_array_get_idx(absent, i), *d = NULL, *vfs = NULL;
                char rec[96] = "-", n[16], asg[16];
                size_t n_asg = 0, n_vfs = 0;

                if (json_object_object_get_ex(a, "desired", &d) && d)
                        snprintf(rec, sizeof(rec), "%lld VFs on %s", jint(d, "numvfs", 0),
                                 strna(jstr(d, "vf_driver")));
                if (json_object_object_get_ex(a, "vfs", &vfs) && vfs)
                        n_vfs = json_object_array_length(vfs);
                for (size_t k = 0; k < n_vfs; k++) {
                        struct json_object *v;

                        if (json_object_object_get_ex(json_object_array_get_idx(vfs, k), "assigned_to", &v) && v)
                                n_asg++;
                }
                snprintf(n, sizeof(n), "%zu", n_vfs);
                snprintf(asg, sizeof(asg), "%zu", n_asg);
                table_add_row(t, (const char *const[]) { jstr(a, "address"), rec, n, asg });
        }
        putchar('\n');
        table_print(t, stdout, 0);
        table_free(t);
        return 0;
}

static int print_list(struct json_object *reply, const void *userdata) {
        struct json_object *pfs;

        if (!json_object_object_get_ex(reply, "pfs", &pfs) || json_object_array_length(pfs) == 0)
                printf("No SR-IOV physical functions found.\n");
        for (size_t i = 0; i < json_object_array_length(pfs); i++) {
                struct json_object *pf = json_object_array_get_idx(pfs, i), *vfs;
                static const char *const pfh[] = { "PF", "ID", "DRIVER", "VFS", "OWNER", "NUMA", "NAME" };
                static const char *const vfh[] = { "VF", "INDEX", "DRIVER", "IOMMU", "MANAGED", "ASSIGNED" };
                struct table *t;
                char id[16], n[32], numa[16], name[256];

                snprintf(id, sizeof(id), "%s:%s", strna(jstr(pf, "vendor_id")), strna(jstr(pf, "device_id")));
                snprintf(n, sizeof(n), "%lld/%lld", jint(pf, "numvfs", 0), jint(pf, "totalvfs", 0));
                if (jint(pf, "numa_node", -1) >= 0)
                        snprintf(numa, sizeof(numa), "%lld", jint(pf, "numa_node", -1));
                else
                        snprintf(numa, sizeof(numa), "-");
                snprintf(name, sizeof(name), "%s %s", jstr(pf, "vendor") ?: "", jstr(pf, "device") ?: "");

                if (i > 0)
                        putchar('\n');
                t = table_new(ELEMENTSOF(pfh), pfh);
                if (!t)
                        return EXIT_FAILURE;
                table_add_row(t, (const char *const[]) { jstr(pf, "address"), id, jstr(pf, "driver"), n,
                                                         jstr(pf, "owner") ?: "-", numa, name });
                table_print(t, stdout, 0);
                table_free(t);

                if (!json_object_object_get_ex(pf, "vfs", &vfs) || json_object_array_length(vfs) == 0)
                        continue;
                putchar('\n');
                t = table_new(ELEMENTSOF(vfh), vfh);
                if (!t)
                        return EXIT_FAILURE;
                for (size_t k = 0; k < json_object_array_length(vfs); k++) {
                        struct json_object *vf = json_object_array_get_idx(vfs, k), *a, *v;
                        char idx[16], grp[16], asg[256] = "-";
                        bool managed = false;

                        snprintf(idx, sizeof(idx), "%lld", jint(vf, "index", 0));
                        if (jint(vf, "iommu_group", -1) >= 0)
                                snprintf(grp, sizeof(grp), "%lld", jint(vf, "iommu_group", -1));
                        else
                                snprintf(grp, sizeof(grp), "-");
                        if (json_object_object_get_ex(vf, "managed", &v))
                                managed = json_object_get_boolean(v);
                        if (json_object_object_get_ex(vf, "assigned_to", &a) && a)
                                snprintf(asg, sizeof(asg), "%s %s %s", jstr(a, "domain") ?: "?",
                                         jstr(a, "guest_address") ?: "-", jstr(a, "state") ?: "?");
                        table_add_row(t, (const char *const[]) { jstr(vf, "address"), idx, jstr(vf, "driver"),
                                                                 grp, managed ? "yes" : "no", asg });
                }
                table_print(t, stdout, 2);
                table_free(t);
        }
        return print_absent(reply);
}

static int cmd_list(int argc, char **argv) {
        struct json_object *params;

        if (argc > 2) {
                fprintf(stderr, "svffctl list: takes at most one PF address; see 'svffctl list --help'.\n");
                return EXIT_USAGE;
        }
        params = json_object_new_object();
        if (argc == 2)
                json_object_object_add(params, "pf", json_object_new_string(argv[1]));
        return call_and_print("io.svff.List", params, arg_timeout, print_list, NULL);
}

static void format_duration(long long usec, char *buf, size_t n) {
        long long s = usec / 1000000;

        if (s >= 86400)
                snprintf(buf, n, "%lldd %lldh", s / 86400, s % 86400 / 3600);
        else if (s >= 3600)
                snprintf(buf, n, "%lldh %lldmin", s / 3600, s % 3600 / 60);
        else if (s >= 60)
                snprintf(buf, n, "%lldmin %llds", s / 60, s % 60);
        else
                snprintf(buf, n, "%lld.%03llds", s, usec / 1000 % 1000);
}

static int print_status(struct json_object *reply, const void *userdata) {
        struct json_object *store, *ops, *drift, *rec, *owners;
        char up[64];

        format_duration(jint(reply, "uptime_usec", 0), up, sizeof(up));
        printf("svffd %s, up %s\n", strna(jstr(reply, "version")), up);
        if (json_object_object_get_ex(reply, "store", &store))
                printf("Store:        %s (generation %lld)\n", strna(jstr(store, "path")),
                       jint(store, "generation", 0));
        printf("Sysfs:        %s\n", strna(jstr(reply, "sysfs_root")));
        printf("Connections:  %lld\n", jint(reply, "connections", 0));
        {
                struct json_object *lv;

                if (json_object_object_get_ex(reply, "libvirt", &lv) && lv)
                {
                        struct json_object *c;
                        bool conn = json_object_object_get_ex(lv, "connected", &c) && json_object_get_boolean(c);

                        printf("libvirt:      %s (%s)\n", strna(jstr(lv, "uri")), conn ? "connected" : "not connected");
                }
                if (jint(reply, "snapshot_age_usec", -1) >= 0)
                        printf("Snapshot:     taken %lld ms ago (list-max-age %lld ms)\n",
                               jint(reply, "snapshot_age_usec", 0) / 1000,
                               jint(reply, "snapshot_max_age_usec", 0) / 1000);
        }
        if (jint(reply, "stuck_writes", 0) > 0)
                printf("Stuck writes: %lld (a VF is held by a user; see the journal)\n",
                       jint(reply, "stuck_writes", 0));
        if (jstr(reply, "config_error"))
                printf("Config:       reload failed, running the previous settings: %s\n",
                       jstr(reply, "config_error"));
        if (jstr(reply, "discovery_error"))
                printf("Discovery:    %s\n", jstr(reply, "discovery_error"));

        if (json_object_object_get_ex(reply, "operations", &ops) && json_object_array_length(ops) > 0) {
                static const char *const h[] = { "OPERATION", "PF", "PHASE", "PROGRESS" };
                struct table *t = table_new(ELEMENTSOF(h), h);

                printf("\nOperations in progress:\n");
                for (size_t i = 0; t && i < json_object_array_length(ops); i++) {
                        struct json_object *o = json_object_array_get_idx(ops, i);
                        char prog[32];

                        snprintf(prog, sizeof(prog), "%lld/%lld", jint(o, "done", 0), jint(o, "total", 0));
                        table_add_row(t, (const char *const[]) { jstr(o, "op"), jstr(o, "pf"), jstr(o, "phase"), prog });
                }
                if (t)
                        table_print(t, stdout, 2);
                table_free(t);
        } else
                printf("Operations:   none\n");

        if (json_object_object_get_ex(reply, "recovered", &rec) && rec)
                for (size_t i = 0; i < json_object_array_length(rec); i++) {
                        struct json_object *o = json_object_array_get_idx(rec, i);

                        printf("Recovered:    reconf of PF %s %s after a restart: %s\n", strna(jstr(o, "pf")),
                               strna(jstr(o, "outcome")), strna(jstr(o, "message")));
                }

        if (json_object_object_get_ex(reply, "owners", &owners) && owners && json_object_array_length(owners) > 0) {
                static const char *const h[] = { "PF", "VFS", "OWNER", "POLICY" };
                struct table *t = table_new(ELEMENTSOF(h), h);

                printf("\nVF counts (owner: who set it; a policy changes only the counts it owns):\n");
                for (size_t i = 0; t && i < json_object_array_length(owners); i++) {
                        struct json_object *o = json_object_array_get_idx(owners, i);
                        char n[16];

                        snprintf(n, sizeof(n), "%lld", jint(o, "numvfs", 0));
                        table_add_row(t, (const char *const[]) { jstr(o, "pf"), n, jstr(o, "owner") ?: "-",
                                                                 jstr(o, "policy") ?: "-" });
                }
                if (t)
                        table_print(t, stdout, 2);
                table_free(t);
                for (size_t i = 0; i < json_object_array_length(owners); i++) {
                        struct json_object *o = json_object_array_get_idx(owners, i);

                        if (jstr(o, "refused"))
                                printf("  %s: policy not applied: %s\n", strna(jstr(o, "pf")), jstr(o, "refused"));
                }
        }

        if (json_object_object_get_ex(reply, "drift", &drift) && json_object_array_length(drift) > 0) {
                printf("\nDrift (the host differs from what svff recorded):\n");
                for (size_t i = 0; i < json_object_array_length(drift); i++) {
                        struct json_object *d = json_object_array_get_idx(drift, i);

                        printf("  %-15s %s\n", strna(jstr(d, "kind")), strna(jstr(d, "message")));
                }
        } else
                printf("Drift:        none\n");
        return 0;
}

static int cmd_status(int argc, char **argv) {
        if (argc > 1) {
                fprintf(stderr, "svffctl status: takes no arguments; see 'svffctl status --help'.\n");
                return EXIT_USAGE;
        }
        return call_and_print("io.svff.Status", NULL, arg_timeout, print_status, NULL);
}

static void print_event_line(struct json_object *ev) {
        long long ts = jint(ev, "timestamp_usec", 0);
        time_t t = (time_t) (ts / 1000000);
        struct tm tm;
        char when[64];

        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        printf("%s.%03lldZ %s", when, ts / 1000 % 1000, strna(jstr(ev, "event")));
        if (jstr(ev, "device"))
                printf(" %s", jstr(ev, "device"));
        if (jstr(ev, "pf") && (!jstr(ev, "device") || !streq(jstr(ev, "pf"), jstr(ev, "device"))))
                printf(" pf=%s", jstr(ev, "pf"));
        if (jstr(ev, "action"))
                printf(" %s", jstr(ev, "action"));
        if (jstr(ev, "domain"))
                printf(" domain=%s", jstr(ev, "domain"));
        if (jstr(ev, "mode"))
                printf(" mode=%s", jstr(ev, "mode"));
        if (jstr(ev, "driver"))
                printf(" driver=%s", jstr(ev, "driver"));
        if (jint(ev, "total", -1) >= 0) {
                if (jint(ev, "done", -1) >= 0)
                        printf(" %lld/%lld", jint(ev, "done", 0), jint(ev, "total", 0));
                else
                        printf(" total=%lld", jint(ev, "total", 0));
        }
        if (jstr(ev, "error"))
                printf(" error=%s", jstr(ev, "error"));
        if (jstr(ev, "message"))
                printf(": %s", jstr(ev, "message"));
        putchar('\n');
}

static int monitor_reply(struct json_object *p, const char *error, bool continues, const void *userdata) {
        struct json_object *ev;

        if (error)
                return report_error(error, p);
        if (json_object_object_get_ex(p, "event", &ev)) {
                if (arg_json)
                        print_json(ev);
                else
                        print_event_line(ev);
                fflush(stdout);
        }
        return continues ? READ_MORE : 0;
}

static int cmd_monitor(int argc, char **argv) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        int r;

        if (argc > 1) {
                fprintf(stderr, "svffctl monitor: takes no arguments; see 'svffctl monitor --help'.\n");
                return EXIT_USAGE;
        }
        r = call_start("io.svff.Monitor", NULL, true, &c);
        if (r != 0)
                return r;
        return read_replies(c, monitor_reply, NULL);
}

/* For "svffctl COMMAND PF NUMVFS" (init, reconf): the parameters pf and
 * numvfs in *ret, or a usage message and EXIT_USAGE. example is a VF
 * count for the message. */
static int pf_numvfs_params(int argc, char **argv, unsigned example, struct json_object **ret) {
        struct json_object *params;
        unsigned numvfs;

        if (argc != 3) {
                fprintf(stderr, "svffctl %s: needs a PF address and a VF count, e.g. "
                                "'svffctl %s 0000:03:00.0 %u'; see 'svffctl %s --help'.\n",
                        argv[0], argv[0], example, argv[0]);
                return EXIT_USAGE;
        }
        if (svff_numvfs_parse(argv[2], &numvfs) < 0) {
                fprintf(stderr, "svffctl %s: '%s' is not a VF count (0 to 65535).\n", argv[0], argv[2]);
                return EXIT_USAGE;
        }
        params = json_object_new_object();
        json_object_object_add(params, "pf", json_object_new_string(argv[1]));
        json_object_object_add(params, "numvfs", json_object_new_int64(numvfs));
        *ret = params;
        return 0;
}

/* userdata: whether progress goes to stderr. */
static int init_reply(struct json_object *p, const char *error, bool continues, const void *userdata) {
        const bool *progress = userdata;
        struct json_object *ev;

        if (*progress)
                fputs("\r\033[K", stderr);
        if (error)
                return report_error(error, p);
        if (continues) {
                if (json_object_object_get_ex(p, "event", &ev) && jint(ev, "total", -1) >= 0)
                        fprintf(stderr, "%s %s %lld/%lld", strna(jstr(ev, "event")),
                                strna(jstr(ev, "device")), jint(ev, "done", 0), jint(ev, "total", 0));
                return READ_MORE;
        }
        if (arg_json)
                print_json(p);
        else
                printf("PF %s: %lld VFs on %s.\n", strna(jstr(p, "pf")), jint(p, "numvfs", 0),
                       strna(jstr(p, "driver")));
        return 0;
}

static int cmd_init(int argc, char **argv) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        _cleanup_json_ struct json_object *params = NULL;
        bool progress = !arg_json && isatty(STDERR_FILENO);
        int r;

        if (arg_policy) {
                /* The policy's count and driver: neither is given. */
                if (argc != 2 || arg_driver) {
                        fprintf(stderr, "svffctl init --policy: takes a PF address only (the count and driver "
                                        "are the policy's), e.g. 'svffctl init 0000:03:00.0 --policy'.\n");
                        return EXIT_USAGE;
                }
                params = json_object_new_object();
                json_object_object_add(params, "pf", json_object_new_string(argv[1]));
                json_object_object_add(params, "policy", json_object_new_boolean(true));
        } else {
                r = pf_numvfs_params(argc, argv, 4, &params);
                if (r != 0)
                        return r;
        }
        if (arg_driver)
                json_object_object_add(params, "driver", json_object_new_string(arg_driver));

        r = call_start("io.svff.Init", params, progress, &c);
        if (r != 0)
                return r;
        return read_replies(c, init_reply, &progress);
}

/* ---- config ---- */

/* Checks the file svffd would read, or FILE, with its drop-ins (FILE.d/)
 * exactly as 'svffd --config FILE' reads them, with svffd's own parser:
 * no daemon involved. --effective prints the settings that result. */
static int cmd_config(int argc, char **argv) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        const char *path;
        int r;

        if (argc < 2 || !streq(argv[1], "check") || argc > 3) {
                fprintf(stderr, "svffctl config: use 'svffctl config check [FILE]'.\n");
                return EXIT_USAGE;
        }
        path = argc == 3 ? argv[2] : SVFFD_CONFIG_DEFAULT;
        r = svff_config_init(&c);
        if (r < 0) {
                fprintf(stderr, "svffctl: out of memory.\n");
                return EXIT_DAEMON_ERROR;
        }
        /* A FILE named must exist, as for svffd --config. */
        r = svff_config_load(&c, path, argc != 3, &err);
        if (r >= 0 && arg_effective) {
                _cleanup_json_ struct json_object *e = svff_config_to_json(&c);

                if (!e) {
                        svff_config_done(&c);
                        fprintf(stderr, "svffctl: out of memory.\n");
                        return EXIT_DAEMON_ERROR;
                }
                print_json(e);
                svff_config_done(&c);
                return 0;
        }
        if (arg_json) {
                _cleanup_json_ struct json_object *o = json_object_new_object();
                struct json_object *errors = json_object_new_array(), *pols = json_object_new_array();

                if (r < 0) {
                        _cleanup_free_ char *msg = strdup(svff_error_message(&err));

                        for (char *line = msg ? strtok(msg, "\n") : NULL; line; line = strtok(NULL, "\n"))
                                json_object_array_add(errors, json_object_new_string(line));
                }
                for (size_t i = 0; r >= 0 && i < c.n_policies; i++)
                        json_object_array_add(pols, json_object_new_string(c.policies[i].name));
                json_object_object_add(o, "file", json_object_new_string(path));
                json_object_object_add(o, "valid", json_object_new_boolean(r >= 0));
                json_object_object_add(o, "errors", errors);
                json_object_object_add(o, "policies", pols);
                print_json(o);
        } else if (r < 0)
                fprintf(stderr, "%s\n", svff_error_message(&err));
        else {
                printf("%s (and drop-ins): valid, %zu polic%s", path,
                       c.n_policies, c.n_policies == 1 ? "y" : "ies");
                for (size_t i = 0; i < c.n_policies; i++)
                        printf("%s%s", i ? ", " : ": ", c.policies[i].name);
                printf(".\n");
        }
        svff_config_done(&c);
        return r < 0 ? EXIT_DAEMON_ERROR : 0;
}

/* userdata: the verb, e.g. "attached to". */
static int print_assignment(struct json_object *reply, const void *userdata) {
        const char *verb = userdata;
        struct json_object *a = NULL;
        bool live = false, config = false;
        struct json_object *v;

        (void) json_object_object_get_ex(reply, "assignment", &a);
        if (json_object_object_get_ex(a, "live", &v))
                live = json_object_get_boolean(v);
        if (json_object_object_get_ex(a, "config", &v))
                config = json_object_get_boolean(v);
        printf("VF %s %s domain '%s' at guest address %s (%s%s%s, alias %s)", strna(jstr(reply, "vf")), verb,
               strna(jstr(a, "domain")), jstr(a, "guest_address") ?: "chosen at start",
               live ? "live" : "", live && config ? "+" : "", config ? "config" : "", strna(jstr(a, "alias")));
        if (jstr(reply, "mode")) {
                bool native = streq(jstr(reply, "mode"), "native"), pausing = streq(verb, "paused in");

                printf(", mode %s (%s)", jstr(reply, "mode"),
                       native    ? (pausing ? "the guest keeps the device" : "resumed in place")
                       : pausing ? "detached, address and alias reserved"
                                 : "re-attached at the reserved address");
        }
        printf(".\n");
        return 0;
}

static int cmd_attach(int argc, char **argv) {
        struct json_object *params;

        if ((arg_pf && argc != 2) || (!arg_pf && argc != 3)) {
                fprintf(stderr, "svffctl attach: needs a VF and a domain ('svffctl attach 0000:03:00.4 vm1'), "
                                "or --pf PF and a domain ('svffctl attach --pf 0000:03:00.0 vm1').\n");
                return EXIT_USAGE;
        }
        params = json_object_new_object();
        if (arg_pf)
                json_object_object_add(params, "pf", json_object_new_string(arg_pf));
        else
                json_object_object_add(params, "vf", json_object_new_string(argv[1]));
        json_object_object_add(params, "domain", json_object_new_string(argv[argc - 1]));
        if (arg_live)
                json_object_object_add(params, "live", json_object_new_boolean(true));
        if (arg_config)
                json_object_object_add(params, "config", json_object_new_boolean(true));
        if (arg_guest_address)
                json_object_object_add(params, "guest_address", json_object_new_string(arg_guest_address));
        return call_and_print("io.svff.Attach", params, 0, print_assignment, "attached to");
}

/* A command on one VF, "svffctl COMMAND VF", that always waits. */
static int vf_call(int argc, char **argv, const char *method, reply_printer_t print, const void *userdata) {
        struct json_object *params;

        if (argc != 2) {
                fprintf(stderr, "svffctl %s: needs one VF address, e.g. 'svffctl %s 0000:03:00.4'.\n", argv[0], argv[0]);
                return EXIT_USAGE;
        }
        params = json_object_new_object();
        json_object_object_add(params, "vf", json_object_new_string(argv[1]));
        return call_and_print(method, params, 0, print, userdata);
}

static int print_released(struct json_object *reply, const void *userdata) {
        if (jstr(reply, "detached_from"))
                printf("VF %s detached from domain '%s'.\n", strna(jstr(reply, "vf")), jstr(reply, "detached_from"));
        printf("VF %s is back on %s.\n", strna(jstr(reply, "vf")), jstr(reply, "driver") ?: "no driver (unbound)");
        return 0;
}

static int print_detached(struct json_object *reply, const void *userdata) {
        printf("VF %s detached from domain '%s'.\n", strna(jstr(reply, "vf")), strna(jstr(reply, "domain")));
        return 0;
}

static int cmd_release(int argc, char **argv) {
        struct json_object *params;

        if (argc != 2) {
                fprintf(stderr, "svffctl release: needs one VF address, e.g. 'svffctl release 0000:03:00.4'.\n");
                return EXIT_USAGE;
        }
        params = json_object_new_object();
        json_object_object_add(params, "vf", json_object_new_string(argv[1]));
        if (arg_force)
                json_object_object_add(params, "force", json_object_new_boolean(true));
        return call_and_print("io.svff.Release", params, 0, print_released, NULL);
}

static int cmd_detach(int argc, char **argv) {
        return vf_call(argc, argv, "io.svff.Detach", print_detached, NULL);
}

static int cmd_pause(int argc, char **argv) {
        return vf_call(argc, argv, "io.svff.Pause", print_assignment, "paused in");
}

static int cmd_unpause(int argc, char **argv) {
        return vf_call(argc, argv, "io.svff.Unpause", print_assignment, "unpaused in");
}

/* ---- reconf ---- */

/* One line per assignment: whether its domain has the VF, and why not. */
static void print_outcomes(FILE *f, struct json_object *p) {
        struct json_object *a;

        if (!json_object_object_get_ex(p, "assignments", &a) || !a || json_object_array_length(a) == 0)
                return;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *o = json_object_array_get_idx(a, i), *v;
                bool has = json_object_object_get_ex(o, "has_vf", &v) && json_object_get_boolean(v);

                fprintf(f, "  %-3s VF %lld %s  domain '%s' at %s: %s%s%s\n", has ? "OK" : "NO", jint(o, "index", 0),
                        strna(jstr(o, "vf")), strna(jstr(o, "domain")), jstr(o, "guest_address") ?: "-",
                        strna(jstr(o, "outcome")), jstr(o, "message") ? ": " : "", jstr(o, "message") ?: "");
        }
}

/* params is borrowed. */
static int reconf_dry_run(struct json_object *params) {
        _cleanup_json_ struct json_object *reply = NULL;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        struct json_object *jp, *v;
        bool ok;
        int r;

        json_object_object_add(params, "dry_run", json_object_new_boolean(true));
        r = call("io.svff.Reconf", params, arg_timeout, &reply);
        if (r != 0)
                return r;
        ok = json_object_object_get_ex(reply, "executable", &v) && json_object_get_boolean(v);
        if (arg_json)
                print_json(reply);
        else if (!json_object_object_get_ex(reply, "plan", &jp) || svff_reconf_plan_from_json(jp, &plan) < 0) {
                fprintf(stderr, "svffctl: svffd sent a plan this svffctl cannot read.\n");
                return EXIT_DAEMON_ERROR;
        } else
                svff_reconf_plan_print(plan, stdout);
        if (!ok) {
                fprintf(stderr, "svffctl: this reconf would be refused; see the plan.\n");
                return EXIT_DAEMON_ERROR;
        }
        return 0;
}

/* userdata: whether stderr is a terminal to show progress on. */
static int reconf_reply(struct json_object *p, const char *error, bool continues, const void *userdata) {
        const bool *tty = userdata;
        struct json_object *ev;
        int r;

        if (*tty)
                fputs("\r\033[K", stderr);
        if (continues) {
                if (!json_object_object_get_ex(p, "event", &ev))
                        return READ_MORE;
                if (arg_json)
                        print_json(ev);
                else if (*tty)
                        fprintf(stderr, "[%lld/%lld] %s %s %s", jint(ev, "done", 0), jint(ev, "total", 0),
                                strna(jstr(ev, "phase")), strna(jstr(ev, "action")),
                                jstr(ev, "domain") ?: jstr(ev, "device") ?: "");
                else
                        print_event_line(ev);
                fflush(stdout);
                return READ_MORE;
        }
        if (error) {
                r = report_error(error, p);
                print_outcomes(stderr, p);
                if (arg_json)
                        print_json(p);
                return r;
        }
        if (arg_json)
                print_json(p);
        else {
                printf("%s.\n", strna(jstr(p, "message")));
                print_outcomes(stdout, p);
        }
        return 0;
}

static int cmd_reconf(int argc, char **argv) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        _cleanup_json_ struct json_object *params = NULL;
        bool tty = !arg_json && isatty(STDERR_FILENO);
        int r;

        r = pf_numvfs_params(argc, argv, 8, &params);
        if (r != 0)
                return r;
        if (arg_mode && svff_reconf_mode_from_string(arg_mode) < 0) {
                fprintf(stderr, "svffctl reconf: --mode is 'pause' or 'detach', not '%s'.\n", arg_mode);
                return EXIT_USAGE;
        }
        if (arg_mode)
                json_object_object_add(params, "mode", json_object_new_string(arg_mode));
        if (arg_force)
                json_object_object_add(params, "force", json_object_new_boolean(true));
        if (arg_dry_run)
                return reconf_dry_run(params);

        r = connect_daemon(&c);
        if (r == 0 && svff_varlink_client_send(c, "io.svff.Reconf", params, true, false) < 0)
                r = transport_error(-EIO);
        if (r != 0)
                return r;
        return read_replies(c, reconf_reply, &tty);
}

/* ---- argv ---- */

struct command {
        const char *name;
        const char *usage;
        const char *help;
        int (*fn)(int argc, char **argv);
        bool has_driver;
        bool has_attach_options;
        bool has_reconf_options;
};

static const struct command commands[] = {
        { "list", "list [PF] [--json]",
          "List the SR-IOV PFs and their VFs: driver, IOMMU group, whether svff manages\n"
          "the VF and which domain it is assigned to.", cmd_list, false },
        { "status", "status [--json]",
          "Show svffd's version, uptime, store path and generation, the operations in\n"
          "progress and any drift between the store and the host.", cmd_status, false },
        { "init", "init PF NUMVFS [--driver DRIVER] [--json] | init PF --policy",
          "Create NUMVFS VFs on PF (through 0 when the count changes), bind each to\n"
          "DRIVER (default: svffd's vf-driver, normally vfio-pci) and record the desired\n"
          "state and each VF's original driver. An unknown driver, more VFs than the PF\n"
          "supports, or another count or driver over assigned VFs is refused before\n"
          "anything changes. The operator then owns the PF's VF count: no policy changes\n"
          "it, on reload or otherwise. --policy applies the PF's policy instead and hands\n"
          "the count back to it. Needs root or the admin group.", cmd_init, true },
        { "release", "release VF [--force] [--json]",
          "Give VF back to the driver it had before svff bound it, and forget it.\n"
          "A VF assigned to a domain is refused (the domain could not start without it):\n"
          "detach it first, or use --force, which detaches it from its domain (as\n"
          "'svffctl detach' does) and then releases it. Needs root or the admin group.",
          cmd_release, false },
        { "monitor", "monitor [--json]",
          "Print svffd's events as they happen, one per line (--json: one JSON object\n"
          "per line), until interrupted.", cmd_monitor, false },
        { "attach", "attach VF DOMAIN | attach --pf PF DOMAIN [--live] [--config] [--guest-address BB:SS.F]",
          "Assign VF (or, with --pf, any free VF of PF on vfio-pci) to the libvirt domain\n"
          "DOMAIN (name or UUID) as a managed='no' vfio hostdev. The VF must be on\n"
          "vfio-pci, its IOMMU group viable and used by no other domain. By default the\n"
          "device goes live if the domain runs, and into its definition (config) if it\n"
          "is persistent; --live and --config choose explicitly. --guest-address puts it\n"
          "at that guest PCI address; otherwise libvirt picks one, which is recorded.\n"
          "Needs root or the admin group.", cmd_attach, false, true },
        { "detach", "detach VF",
          "Remove VF from its domain, waiting for the guest to release it (svffd's\n"
          "detach-timeout-sec). If the guest does not, the VF stays 'detaching' and the\n"
          "command fails; run it again later.", cmd_detach, false },
        { "pause", "pause VF",
          "Pause VF's assignment: natively when the domain's QEMU offers the device-pause\n"
          "command (the guest keeps seeing the device), else by detaching it while\n"
          "reserving its guest address and alias. Prints which mode was used.", cmd_pause, false },
        { "unpause", "unpause VF",
          "Resume a paused VF: natively, or by re-attaching it at the reserved guest\n"
          "address with the same alias.", cmd_unpause, false },
        { "reconf", "reconf PF NUMVFS [--mode pause|detach] [--dry-run] [--force] [--json]",
          "Change PF's VF count to NUMVFS while every domain keeps its VFs: pause (native\n"
          "where the domain's QEMU offers it, else detach with the address reserved) or,\n"
          "with --mode detach, detach every assigned VF, in parallel across domains; set\n"
          "the count through 0; bind the VFs to vfio-pci; put every assignment back at\n"
          "the same VF index, guest address and alias. Assignments whose VF index is not\n"
          "below NUMVFS are refused unless --force, which releases them. --dry-run prints\n"
          "the plan (every assignment, its fate, every step) and changes nothing. A\n"
          "failure ends in the best consistent state and names each domain that does not\n"
          "have its VF, and why. Needs root or the admin group (not for --dry-run).",
          cmd_reconf, false, false, true },
        { "config", "config check [FILE] [--effective] [--json]",
          "Validate FILE (default: svffd's config file) and its drop-ins FILE.d/*.conf,\n"
          "as 'svffd --config FILE' reads them, with svffd's own parser; every problem\n"
          "is named as FILE:LINE: key 'KEY' .... --effective prints the settings that\n"
          "result, as JSON. Exit status 1 when invalid. Needs no daemon.", cmd_config, false },
};

static void help(void) {
        printf("Usage: svffctl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Manage SR-IOV virtual functions through svffd.\n"
               "\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                printf("  %s\n", commands[i].usage);
        printf("\n"
               "Options (before or after the command):\n"
               "  -h --help          Show help (for a command: svffctl COMMAND --help)\n"
               "     --socket=PATH   svffd's socket (default $SVFF_SOCKET or %s)\n"
               "     --json          Print JSON on stdout\n"
               "     --timeout=SEC   Give up on svffd after SEC seconds (default 30; 0: never;\n"
               "                     init, release and reconf always wait)\n"
               "     --version       Show the version\n"
               "\n"
               "Exit status: 0 success, 1 svffd reported a failure, 2 usage error,\n"
               "3 svffd unreachable, 4 permission denied.\n",
               SOCKET_DEFAULT);
}

static void command_help(const struct command *c) {
        printf("Usage: svffctl %s\n\n%s\n\n"
               "Options:\n"
               "  --json          Print JSON on stdout\n"
               "%s%s%s%s"
               "  --socket=PATH   svffd's socket\n"
               "\nExit status: 0 success, 1 svffd reported a failure, 2 usage error,\n"
               "3 svffd unreachable, 4 permission denied.\n",
               c->usage, c->help,
               c->has_driver ? "  --driver=NAME   Bind the VFs to NAME instead of svffd's default\n"
                               "  --policy        Apply PF's policy, which owns its count again\n" : "",
               c->has_attach_options ? "  --pf=PF         Take any free VF of PF\n"
                                       "  --live          Attach to the running domain\n"
                                       "  --config        Attach to the domain's persistent definition\n"
                                       "  --guest-address=BB:SS.F  Guest PCI address\n" : "",
               c->has_reconf_options ? "  --mode=MODE     pause (default) or detach\n"
                                       "  --dry-run       Print the plan, change nothing\n"
                                       "  --force         Release assignments the new count removes\n" : "",
               c->fn == cmd_release ? "  --force         Detach VF from its domain first\n" : "");
}

int main(int argc, char **argv) {
        enum { ARG_SOCKET = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_DRIVER, ARG_VERSION, ARG_LIVE, ARG_CONFIG,
               ARG_GUEST_ADDRESS, ARG_PF, ARG_MODE, ARG_DRY_RUN, ARG_FORCE, ARG_POLICY, ARG_EFFECTIVE };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "json", no_argument, NULL, ARG_JSON },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                { "driver", required_argument, NULL, ARG_DRIVER },
                { "version", no_argument, NULL, ARG_VERSION },
                { "live", no_argument, NULL, ARG_LIVE },
                { "config", no_argument, NULL, ARG_CONFIG },
                { "guest-address", required_argument, NULL, ARG_GUEST_ADDRESS },
                { "pf", required_argument, NULL, ARG_PF },
                { "mode", required_argument, NULL, ARG_MODE },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "force", no_argument, NULL, ARG_FORCE },
                { "policy", no_argument, NULL, ARG_POLICY },
                { "effective", no_argument, NULL, ARG_EFFECTIVE },
                {}
        };
        const struct command *cmd = NULL;
        bool want_help = false;
        char **args;
        int n_args = 0, o;

        /* Options may come anywhere; positional arguments are kept in
         * order (getopt permutes them to the end). */
        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (o) {
                case 'h':
                        want_help = true;
                        break;
                case ARG_SOCKET:
                        arg_socket = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_EFFECTIVE:
                        arg_effective = true;
                        break;
                case ARG_TIMEOUT: {
                        char *end;
                        unsigned long long s;

                        errno = 0;
                        s = strtoull(optarg, &end, 10);
                        if (errno || end == optarg || *end || s > 86400 * 365) {
                                fprintf(stderr, "svffctl: --timeout takes seconds, not '%s'.\n", optarg);
                                return EXIT_USAGE;
                        }
                        arg_timeout = s * USEC_PER_SEC;
                        break;
                }
                case ARG_DRIVER:
                        arg_driver = optarg;
                        break;
                case ARG_VERSION:
                        printf("svffctl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_LIVE:
                        arg_live = true;
                        break;
                case ARG_CONFIG:
                        arg_config = true;
                        break;
                case ARG_GUEST_ADDRESS:
                        arg_guest_address = optarg;
                        break;
                case ARG_PF:
                        arg_pf = optarg;
                        break;
                case ARG_MODE:
                        arg_mode = optarg;
                        break;
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case ARG_FORCE:
                        arg_force = true;
                        break;
                case ARG_POLICY:
                        arg_policy = true;
                        break;
                default:
                        fprintf(stderr, "See 'svffctl --help'.\n");
                        return EXIT_USAGE;
                }
        }
        args = argv + optind;
        n_args = argc - optind;

        if (n_args == 0) {
                if (want_help) {
                        help();
                        return 0;
                }
                fprintf(stderr, "svffctl: no command given; see 'svffctl --help'.\n");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(args[0], commands[i].name))
                        cmd = &commands[i];
        if (!cmd) {
                fprintf(stderr, "svffctl: unknown command '%s'; see 'svffctl --help'.\n", args[0]);
                return EXIT_USAGE;
        }
        if (want_help) {
                command_help(cmd);
                return 0;
        }
        if ((arg_driver || arg_policy) && !cmd->has_driver) {
                fprintf(stderr, "svffctl %s: --driver and --policy only apply to init.\n", cmd->name);
                return EXIT_USAGE;
        }
        if ((arg_live || arg_config || arg_guest_address || arg_pf) && !cmd->has_attach_options) {
                fprintf(stderr, "svffctl %s: --pf, --live, --config and --guest-address only apply to attach.\n",
                        cmd->name);
                return EXIT_USAGE;
        }
        if ((arg_mode || arg_dry_run || (arg_force && cmd->fn != cmd_release)) && !cmd->has_reconf_options) {
                fprintf(stderr, "svffctl %s: --mode and --dry-run only apply to reconf, --force to reconf and release.\n",
                        cmd->name);
                return EXIT_USAGE;
        }
        return cmd->fn(n_args, args);
}
