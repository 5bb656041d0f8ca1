/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svffctl: argv -> one varlink call to svffd -> a table or JSON.
 *
 * Exit codes: EXIT_* in cli.h, as the table in svffctl(8) says. */

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cause.h"
#include "cli.h"
#include "config-file.h"
#include "drift.h"
#include "json-util.h"
#include "list.h"
#include "macro.h"
#include "pciaddr.h"
#include "progress.h"
#include "reconf.h"
#include "sriov.h"
#include "table.h"
#include "utf8.h"
#include "varlink.h"

#define SOCKET_DEFAULT "/run/svff/svffd.sock"  /* svffd's default, not prefix-relative */
#define TIMEOUT_DEFAULT (30 * USEC_PER_SEC)
/* The longest domain name svffd takes (SVFF_DOMAIN_NAME_MAX - 1 in
 * src/hypervisor.h, which needs libvirt's headers the CLI does without). */
#define DOMAIN_NAME_MAX 255
/* How often a reply loop looks at Ctrl-C and the deadline, and redraws
 * progress while svffd is silent. */
#define TICK_USEC (200 * USEC_PER_MSEC)

bool arg_json = false;
static const char *arg_socket = NULL;
static usec_t arg_timeout = TIMEOUT_DEFAULT;
static bool arg_timeout_set = false;
static bool arg_effective = false;
static const char *arg_driver = NULL;
static bool arg_live = false;
static bool arg_config = false;
static const char *arg_guest_address = NULL;
static const char *arg_failover = NULL;
/* attach: the device-class settings the assignment adds (Attach's
 * "class"); NIC options map onto the same object. */
static struct json_object *arg_class = NULL;
static const char *arg_pf = NULL;
static const char *arg_domain = NULL;   /* list --domain */
static const char *arg_mode = NULL;
static bool arg_dry_run = false;
static bool arg_force = false;
static bool arg_cycle = false;
static bool arg_release = false;
static bool arg_policy = false;
static const char *arg_numvfs = NULL;
static const char *arg_reprogram = NULL;
static const char *arg_output = NULL;
static bool arg_no_reconnect = false;
static bool arg_utc = false;          /* monitor: times in UTC */
static bool arg_verbose = false;
static bool arg_quiet = false;
static bool arg_wait = false;

static volatile sig_atomic_t interrupted = 0;

static const char *socket_path(void) {
        return arg_socket ?: getenv("SVFF_SOCKET") ?: SOCKET_DEFAULT;
}

/* ---- output shared by the commands ---- */

const char *jstr(struct json_object *o, const char *key) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

long long jint(struct json_object *o, const char *key, long long def) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return def;
        return (long long) json_object_get_int64(v);
}

void print_json(FILE *f, struct json_object *o) {
        fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), f);
        fputc('\n', f);
}

static void verror(const char *name, struct json_object *params, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;

        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        if (arg_json) {
                _cleanup_json_ struct json_object *o = json_object_new_object(), *p = NULL;

                p = params && json_object_is_type(params, json_type_object) ? json_object_get(params)
                                                                            : json_object_new_object();
                if (msg && !json_object_object_get_ex(p, "message", NULL))
                        json_object_object_add(p, "message", json_object_new_string(msg));
                json_object_object_add(o, "error", json_object_new_string(name));
                json_object_object_add(o, "parameters", TAKE_PTR(p));
                print_json(stderr, o);
        } else
                fprintf(stderr, "svffctl: %s\n", msg ?: name);
}

void cli_error(const char *name, struct json_object *params, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        verror(name, params, fmt, ap);
        va_end(ap);
}

int usage_error(const char *command, const char *fmt, ...) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                msg = NULL;
        if (command)
                json_object_object_add(p, "command", json_object_new_string(command));
        if (arg_json)
                cli_error("io.svff.ctl.UsageError", p, "%s", strna(msg));
        else
                fprintf(stderr, "svffctl%s%s: %s\n", command ? " " : "", command ?: "", strna(msg));
        return EXIT_USAGE;
}

const char *guest_address_display(const char *a, char *buf, size_t n) {
        struct svff_pci_addr pa;

        if (!a || svff_pci_addr_parse(a, &pa) < 0 || pa.domain != 0)
                return a;
        snprintf(buf, n, "%02x:%02x.%x", pa.bus, pa.slot, pa.func);
        return buf;
}

unsigned output_width(FILE *f) {
        struct winsize ws = {};
        const char *e;
        unsigned long v;
        char *end;

        if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col;
        e = getenv("COLUMNS");
        if (!e || !*e)
                return 0;
        errno = 0;
        v = strtoul(e, &end, 10);
        if (errno || *end || v == 0 || v > 10000)
                return 0;
        return (unsigned) v;
}

/* ---- talking to svffd ---- */

/* Every string of a reply (names, messages, a hook's last line) as a
 * terminal may show it: svffd passes on text it did not write, and a
 * control character in it would act on the terminal instead of being
 * read. Line breaks stay, for messages of several lines; tables escape
 * them too. --json prints the reply as it came. */
static int escape_strings(struct json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_string: {
                _cleanup_free_ char *e = svff_utf8_escape(json_object_get_string(v), true);

                if (!e)
                        return -ENOMEM;
                if (!streq(e, json_object_get_string(v)) && json_object_set_string(v, e) == 0)
                        return -ENOMEM;
                return 0;
        }
        case json_type_object:
                json_object_object_foreach(v, key, val) {
                        int r = escape_strings(val);

                        (void) key;
                        if (r < 0)
                                return r;
                }
                return 0;
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        int r = escape_strings(json_object_array_get_idx(v, i));

                        if (r < 0)
                                return r;
                }
                return 0;
        default:
                return 0;
        }
}

static int connect_daemon(struct svff_varlink_client **ret) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        int r = svff_varlink_client_connect(socket_path(), ret);

        if (r >= 0)
                return 0;
        json_object_object_add(p, "socket", json_object_new_string(socket_path()));
        json_object_object_add(p, "errno", json_object_new_string(strerror(-r)));
        if (r == -EACCES || r == -EPERM) {
                struct stat st;
                struct group *g = NULL;
                char gid[32] = "";

                /* Reading needs the socket's group (svffd.socket's
                 * SocketGroup=); changing devices, root or admin_group. */
                if (stat(socket_path(), &st) >= 0) {
                        g = getgrgid(st.st_gid);
                        snprintf(gid, sizeof(gid), "%u", (unsigned) st.st_gid);
                }
                cli_error("io.svff.ctl.PermissionDenied", p,
                          "cannot connect to svffd at '%s': %s. To read, join the socket's group%s%s%s "
                          "('usermod -aG %s USER', then log in again); changing devices needs root or svffd's "
                          "admin_group as well.", socket_path(), strerror(-r), *gid ? " '" : "",
                          g ? g->gr_name : gid, *gid ? "'" : "", g ? g->gr_name : *gid ? gid : "svff");
                return EXIT_PERMISSION;
        }
        if (r == -ENOENT || r == -ECONNREFUSED)
                cli_error("io.svff.ctl.Unreachable", p,
                          "cannot connect to svffd at '%s': %s. Is svffd running? Start it with "
                          "'systemctl start svffd.socket', or point --socket / SVFF_SOCKET at its socket.",
                          socket_path(), strerror(-r));
        else
                cli_error("io.svff.ctl.Unreachable", p, "cannot connect to svffd at '%s': %s.", socket_path(),
                          strerror(-r));
        return EXIT_UNREACHABLE;
}

static int transport_error(int r) {
        _cleanup_json_ struct json_object *p = json_object_new_object();

        json_object_object_add(p, "socket", json_object_new_string(socket_path()));
        json_object_object_add(p, "errno", json_object_new_string(strerror(-r)));
        cli_error("io.svff.ctl.Unreachable", p, "lost svffd at '%s': %s.", socket_path(), strerror(-r));
        return EXIT_UNREACHABLE;
}

/* Either spelling: svffd's own errors, or the varlink service's generic
 * ones it may use instead. */
static bool error_is(const char *error, const char *name) {
        const char *dot = strrchr(error, '.');

        return (strncmp(error, "io.svff.", 8) == 0 || strncmp(error, "org.varlink.service.", 20) == 0) && dot &&
               streq(dot + 1, name);
}

/* The parameters of the call in flight, for naming a rejected value:
 * org.varlink.service.InvalidParameter names only the parameter. */
static struct json_object *sent_params;

/* What a parameter svffd found malformed must be, for those svffctl
 * passes on as given (InvalidParameter carries no message). */
static const char *invalid_hint(const char *param) {
        if (streq(param, "driver"))
                return "a driver name (letters, digits, '_', '-' and '.', as under /sys/bus/pci/drivers/)";
        return NULL;
}

/* Prints a daemon error to stderr; returns the exit code for it. */
static int report_error(const char *error, struct json_object *p) {
        const char *msg = jstr(p, "message");
        const char *param = jstr(p, "parameter");
        const char *device = jstr(p, "device");
        int r = EXIT_DAEMON_ERROR;

        if (error_is(error, "PermissionDenied"))
                r = EXIT_PERMISSION;
        else if (error_is(error, "InvalidParameter"))
                r = EXIT_USAGE;   /* svffd found an argument malformed */

        if (arg_json) {
                cli_error(error, p, "%s", msg ?: error);
                return r;
        }
        /* svffd answers bad parameters and refusals with the standard
         * errors, which carry no message: say it here. */
        if (!msg && r == EXIT_PERMISSION)
                fprintf(stderr, "svffctl: svffd refused the call: it changes devices.\n");
        else if (msg)
                fprintf(stderr, "svffctl: %s\n", msg);
        else if (param && jstr(sent_params, param) && invalid_hint(param))
                fprintf(stderr, "svffctl: '%s' is not %s; nothing was changed.\n", jstr(sent_params, param),
                        invalid_hint(param));
        else if (param && jstr(sent_params, param))
                fprintf(stderr, "svffctl: svffd rejected %s '%s' (%s); its debug log says why.\n", param,
                        jstr(sent_params, param), error);
        else if (param)
                fprintf(stderr, "svffctl: svffd rejected the value of parameter '%s' (%s); "
                                "its debug log says why.\n", param, error);
        else if (device)
                fprintf(stderr, "svffctl: %s: %s\n", error, device);
        else
                fprintf(stderr, "svffctl: %s\n", error);

        if (r == EXIT_PERMISSION)
                fprintf(stderr, "Run it as root, or as a member of the admin group named in svff.conf.\n");
        if (streq(error, "org.varlink.service.MethodNotFound") ||
            streq(error, "org.varlink.service.InterfaceNotFound"))
                fprintf(stderr, "svffd is older than this svffctl; restart it after upgrading.\n");
        return r;
}

static void on_sigint(int sig) {
        interrupted = 1;
}

/* Ctrl-C on a command that changes devices does not stop svffd: the
 * reply loop notices and says how to follow the operation. */
static void catch_sigint(void) {
        struct sigaction sa = { .sa_handler = on_sigint };

        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, NULL);
}

#define READ_MORE (-1)
/* status --wait: operations still in progress, ask again. */
#define EXIT_BUSY_POLL (-2)

/* Handles one reply: an exit code when it ends the command, else
 * READ_MORE. */
typedef int (*reply_handler_t)(struct json_object *p, const char *error, bool continues, void *userdata);

struct call {
        const char *method;
        struct json_object *params;     /* borrowed; NULL for none */
        bool more;
        bool changes;                   /* changes devices: Ctrl-C leaves it running in svffd */
        usec_t timeout;                 /* the whole call; 0: none */
        reply_handler_t handle;
        void *userdata;
        struct progress *progress;      /* NULL, or redrawn while svffd is silent */
};

static int call_run(const struct call *call) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        usec_t deadline = call->timeout > 0 ? svff_now_usec() + call->timeout : 0;
        int r;

        if (call->changes)
                catch_sigint();
        r = connect_daemon(&c);
        if (r != 0)
                return r;
        r = svff_varlink_client_send(c, call->method, call->params, call->more, false);
        if (r < 0)
                return transport_error(r);
        json_object_put(sent_params);
        sent_params = json_object_get(call->params);

        for (;;) {
                _cleanup_json_ struct json_object *p = NULL;
                _cleanup_free_ char *error = NULL;
                bool continues;

                r = svff_varlink_client_read(c, TICK_USEC, &p, &error, &continues);
                if (r == -ETIMEDOUT) {
                        if (interrupted) {
                                if (call->progress)
                                        progress_clear(call->progress);
                                cli_error("io.svff.ctl.Interrupted", NULL,
                                          "interrupted; the operation continues in svffd; follow it with "
                                          "`svffctl monitor`.");
                                return EXIT_INTERRUPTED;
                        }
                        if (deadline > 0 && svff_now_usec() >= deadline) {
                                _cleanup_json_ struct json_object *tp = json_object_new_object();

                                if (call->progress)
                                        progress_clear(call->progress);
                                json_object_object_add(tp, "timeout_sec",
                                                       json_object_new_int64((int64_t) (call->timeout / USEC_PER_SEC)));
                                if (call->changes)
                                        cli_error("io.svff.ctl.Timeout", tp,
                                                  "svffd did not finish within --timeout=%llu; the operation "
                                                  "continues in svffd; follow it with `svffctl monitor`.",
                                                  (unsigned long long) (call->timeout / USEC_PER_SEC));
                                else
                                        cli_error("io.svff.ctl.Timeout", tp,
                                                  "svffd did not answer within --timeout=%llu.",
                                                  (unsigned long long) (call->timeout / USEC_PER_SEC));
                                return EXIT_UNREACHABLE;
                        }
                        if (call->progress)
                                progress_tick(call->progress);
                        continue;
                }
                if (r >= 0 && !arg_json)
                        r = escape_strings(p);
                if (r < 0) {
                        if (call->progress)
                                progress_clear(call->progress);
                        return transport_error(r);
                }
                r = call->handle(p, error, continues, call->userdata);
                if (r != READ_MORE)
                        return r;
        }
}

/* Prints a successful reply for humans; returns the exit code. */
typedef int (*reply_printer_t)(struct json_object *reply, const void *userdata);

struct printer {
        reply_printer_t print;
        const void *userdata;
};

static int print_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        const struct printer *pr = userdata;

        if (error)
                return report_error(error, p);
        if (arg_json) {
                print_json(stdout, p);
                return 0;
        }
        return pr->print(p, pr->userdata);
}

/* The timeout of a call: --timeout when given, else what the command
 * does by default (waits stands for "until svffd answers"). */
static usec_t timeout_for(bool waits) {
        if (arg_timeout_set)
                return arg_timeout;
        return waits ? 0 : TIMEOUT_DEFAULT;
}

/* One call whose reply goes to stdout: as JSON with --json, else through
 * print. params (NULL for none) is taken. changes: it changes devices
 * (waits for svffd unless --timeout). Returns the exit code. */
static int call_and_print(const char *method, struct json_object *params, bool changes,
                          reply_printer_t print, const void *userdata) {
        _cleanup_json_ struct json_object *p = params;
        struct printer pr = { print, userdata };

        return call_run(&(struct call) {
                .method = method,
                .params = p,
                .changes = changes,
                .timeout = timeout_for(changes),
                .handle = print_reply,
                .userdata = &pr,
        });
}

/* ---- arguments checked before svffd is asked ---- */

/* A PF or VF address argument, canonicalised into buf; else a usage
 * error (EXIT_USAGE). what: "PF" or "VF". */
static int parse_device(const char *command, const char *what, const char *s, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        if (svff_pci_addr_canonicalize(s, buf) < 0)
                return usage_error(command, "'%s' is not a %s address; use the PCI form 0000:03:00.0.", s, what);
        return 0;
}

static int check_domain(const char *command, const char *d) {
        size_t n = strlen(d);

        if (n == 0)
                return usage_error(command, "the domain name is empty; give a libvirt domain name or UUID.");
        if (n > DOMAIN_NAME_MAX)
                return usage_error(command, "the domain name is too long: %zu characters, at most %d.", n,
                                   DOMAIN_NAME_MAX);
        return 0;
}

static int check_guest_address(const char *command, const char *s) {
        struct svff_pci_addr a;

        if (svff_pci_addr_parse(s, &a) < 0)
                return usage_error(command, "--guest-address '%s' is not a guest PCI address; use the form "
                                   "BB:SS.F, e.g. 05:00.0.", s);
        if (a.domain == 0 && a.bus == 0 && a.slot == 0)
                return usage_error(command, "--guest-address %s: slot 00:00 is the guest's host bridge; "
                                   "choose a free slot, e.g. 05:00.0.", s);
        return 0;
}

/* ---- commands ---- */

static int print_list(struct json_object *reply, const void *userdata) {
        return list_print(reply);
}

/* A List reply cut down to what 'list ADDR... --domain D' asks for,
 * then printed as print_reply() would. */
static int print_list_filtered(struct json_object *p, const char *error, bool continues, void *userdata) {
        const struct list_filter *f = userdata;
        struct json_object *pfs = NULL, *absent = NULL;
        const char *unknown;
        size_t n;
        int r;

        if (error)
                return report_error(error, p);
        r = list_filter(p, f, &unknown);
        if (r == -ENODEV) {
                _cleanup_json_ struct json_object *e = json_object_new_object();

                if (e)
                        json_object_object_add(e, "device", json_object_new_string(unknown));
                cli_error("io.svff.NoSuchDevice", e, "No SR-IOV PF or VF %s; 'svffctl list' shows the devices "
                          "there are.", unknown);
                return EXIT_DAEMON_ERROR;
        }
        if (r < 0)
                return transport_error(r);
        if (arg_json) {
                print_json(stdout, p);
                return 0;
        }
        if (!json_object_object_get_ex(p, "pfs", &pfs) || !json_object_is_type(pfs, json_type_array))
                pfs = NULL;
        if (!json_object_object_get_ex(p, "absent", &absent) || !json_object_is_type(absent, json_type_array))
                absent = NULL;
        n = (pfs ? json_object_array_length(pfs) : 0) + (absent ? json_object_array_length(absent) : 0);
        if (f->domain && n == 0) {
                printf("No VF%s is assigned to domain '%s'.\n", f->n_addrs > 0 ? " of those named" : "",
                       f->domain);
                return 0;
        }
        return list_print(p);
}

static int cmd_list(int argc, char **argv) {
        _cleanup_free_ char (*addrs)[SVFF_PCI_ADDR_STRLEN] = NULL;
        _cleanup_json_ struct json_object *params = NULL;
        struct list_filter f = { .domain = arg_domain };
        int r;

        if (f.domain) {
                r = check_domain("list", f.domain);
                if (r != 0)
                        return r;
        }
        addrs = calloc(argc > 1 ? argc - 1 : 1, sizeof(*addrs));
        if (!addrs)
                return transport_error(-ENOMEM);
        for (int i = 1; i < argc; i++) {
                r = parse_device("list", "PF or VF", argv[i], addrs[f.n_addrs]);
                if (r != 0)
                        return r;
                f.n_addrs++;
        }
        f.addrs = addrs;
        if (f.n_addrs == 0 && !f.domain)
                return call_and_print("io.svff.List", json_object_new_object(), false, print_list, NULL);
        /* The whole host's reply, cut down here: svffd's own filter
         * takes one PF, and no VF or domain. */
        params = json_object_new_object();
        return call_run(&(struct call) {
                .method = "io.svff.List",
                .params = params,
                .timeout = timeout_for(false),
                .handle = print_list_filtered,
                .userdata = &f,
        });
}

/* A handler keeping the reply (a new reference in *userdata). */
static int keep_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        struct json_object **ret = userdata;

        (void) continues;
        if (error)
                return report_error(error, p);
        json_object_put(*ret);
        *ret = json_object_get(p);
        return 0;
}

/* Show's reply under the PF's List entry (userdata; may be NULL). */
static int print_show(struct json_object *reply, const void *userdata) {
        struct json_object *pf = (struct json_object *) userdata, *dc, *lines, *settings;
        const char *vendor = NULL, *device = NULL;

        if (pf) {
                vendor = jstr(pf, "vendor_name");
                device = jstr(pf, "device_name");
                printf("PF %s  %s%s%s [%s:%s]\n", strna(jstr(pf, "address")), vendor ?: "", vendor ? " " : "",
                       device ?: "unknown device", strna(jstr(pf, "vendor_id")), strna(jstr(pf, "device_id")));
                printf("  driver %s, %lld of %lld VF%s (sriov_totalvfs), count owned by %s\n",
                       jstr(pf, "driver") ?: "none", jint(pf, "numvfs", 0), jint(pf, "totalvfs", 0),
                       plural_s(jint(pf, "totalvfs", 0)), jstr(pf, "owner") ?: "nobody");
        } else
                printf("PF %s\n", strna(jstr(reply, "pf")));
        if (!json_object_object_get_ex(reply, "device_class", &dc) || !dc) {
                printf("  device class: none (a bare PCI function: svff gives its VFs nothing beyond the function)\n");
                return 0;
        }
        printf("  device class: %s\n", strna(jstr(dc, "name")));
        if (json_object_object_get_ex(dc, "capacity", &lines) && json_object_is_type(lines, json_type_array))
                for (size_t i = 0; i < json_object_array_length(lines); i++)
                        printf("    %s\n", strna(json_object_get_string(json_object_array_get_idx(lines, i))));
        if (json_object_object_get_ex(dc, "settings", &settings) && settings)
                printf("  policy settings: %s\n",
                       json_object_to_json_string_ext(settings, JSON_C_TO_STRING_SPACED |
                                                                        JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

static int cmd_show(int argc, char **argv) {
        _cleanup_json_ struct json_object *params = NULL, *list = NULL;
        struct json_object *pfs, *pf = NULL;
        char addr[SVFF_PCI_ADDR_STRLEN];
        int r;

        if (argc != 2)
                return usage_error("show", "give one PF address, e.g. 'svffctl show 0000:03:00.0'.");
        r = parse_device("show", "PF", argv[1], addr);
        if (r != 0)
                return r;
        params = json_object_new_object();
        if (!params)
                return transport_error(-ENOMEM);
        json_object_object_add(params, "pf", json_object_new_string(addr));
        if (!arg_json) {
                /* The PF's own line first: its List entry. */
                r = call_run(&(struct call) {
                        .method = "io.svff.List",
                        .params = params,
                        .timeout = timeout_for(false),
                        .handle = keep_reply,
                        .userdata = &list,
                });
                if (r != 0)
                        return r;
                if (json_object_object_get_ex(list, "pfs", &pfs) && json_object_is_type(pfs, json_type_array) &&
                    json_object_array_length(pfs) > 0)
                        pf = json_object_array_get_idx(pfs, 0);
        }
        return call_and_print("io.svff.Show", TAKE_PTR(params), false, print_show, pf);
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

/* A VF limit of a Status owner entry; 0 when not known. */
static unsigned limit_of(struct json_object *o, const char *key) {
        long long v = jint(o, key, 0);

        return v > 0 && v <= UINT32_MAX ? (unsigned) v : 0;
}

static int print_status(struct json_object *reply, const void *userdata) {
        struct json_object *store, *ops, *drift, *rec, *v;
        char up[64];

        format_duration(jint(reply, "uptime_usec", 0), up, sizeof(up));
        printf("svffd %s, up %s\n", strna(jstr(reply, "version")), up);
        if (json_object_object_get_ex(reply, "store", &store))
                printf("Store:        %s (generation %lld)\n", strna(jstr(store, "path")),
                       jint(store, "generation", 0));
        printf("Sysfs:        %s\n", strna(jstr(reply, "sysfs_root")));
        {
                struct json_object *lv;

                if (json_object_object_get_ex(reply, "libvirt", &lv) && lv)
                {
                        struct json_object *c;
                        bool conn = json_object_object_get_ex(lv, "connected", &c) && json_object_get_boolean(c);

                        printf("libvirt:      %s (%s)\n", strna(jstr(lv, "uri")), conn ? "connected" : "not connected");
                }
                if (jint(reply, "snapshot_age_usec", -1) >= 0) {
                        printf("Snapshot:     taken %lld ms ago (list_max_age_msec %lld)",
                               jint(reply, "snapshot_age_usec", 0) / 1000,
                               jint(reply, "snapshot_max_age_usec", 0) / 1000);
                        /* An older svffd does not count them. */
                        if (jint(reply, "snapshot_waits", -1) >= 0)
                                printf("; %lld call(s) waited for a new one", jint(reply, "snapshot_waits", 0));
                        printf("\n");
                }
        }
        if (jint(reply, "stuck_writes", 0) > 0)
                printf("Stuck writes: %lld (past their deadline, still running in the kernel: a slow driver or a "
                       "VF held open)\n",
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
                        struct json_object *o = json_object_array_get_idx(rec, i), *ar;
                        const char *outcome = strna(jstr(o, "outcome"));
                        /* An svffd without after_restart only recovered
                         * at start-up. */
                        bool restart = !json_object_object_get_ex(o, "after_restart", &ar) ||
                                       json_object_get_boolean(ar);

                        printf("Recovered:    reconf of PF %s %s from its journal%s: %s\n", strna(jstr(o, "pf")),
                               outcome, restart ? " after svffd restarted" : "", strna(jstr(o, "message")));
                }

        if (json_object_object_get_ex(reply, "owners", &v) && v && json_object_array_length(v) > 0) {
                static const char *const h[] = { "PF", "VFS", "OWNER", "POLICY", "LIMIT" };
                struct table *t = table_new(ELEMENTSOF(h), h);

                printf("\nVF counts (owner: who set it; a policy changes only the counts it owns):\n");
                for (size_t i = 0; t && i < json_object_array_length(v); i++) {
                        struct json_object *o = json_object_array_get_idx(v, i);
                        char n[16], lim[16];

                        snprintf(n, sizeof(n), "%lld", jint(o, "numvfs", 0));
                        if (jint(o, "totalvfs", -1) >= 0)
                                snprintf(lim, sizeof(lim), "%lld", jint(o, "totalvfs", 0));
                        else
                                snprintf(lim, sizeof(lim), "-");
                        table_add_row(t, (const char *const[]) { jstr(o, "pf"), n, jstr(o, "owner") ?: "-",
                                                                 jstr(o, "policy") ?: "-", lim });
                }
                if (t)
                        table_print(t, stdout, 2);
                table_free(t);
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        struct json_object *o = json_object_array_get_idx(v, i);
                        _cleanup_free_ char *why = NULL;

                        if (jstr(o, "refused"))
                                printf("  %s: policy not applied: %s\n", strna(jstr(o, "pf")), jstr(o, "refused"));
                        if (jstr(o, "changing"))
                                printf("  %s: changing: %s\n", strna(jstr(o, "pf")), jstr(o, "changing"));
                        /* What sets LIMIT, in the words of every message
                         * about a refused count: when something other
                         * than the device lowers it or shares it out
                         * (every PF with -v). */
                        if (!arg_verbose && limit_of(o, "cap_totalvfs") <= limit_of(o, "totalvfs") &&
                            limit_of(o, "vf_total_msix") == 0)
                                continue;
                        if (svff_vf_limits_phrase(limit_of(o, "totalvfs"), limit_of(o, "cap_totalvfs"),
                                                  limit_of(o, "vf_total_msix"), &why) >= 0 && why)
                                printf("  %s: limit: %s\n", strna(jstr(o, "pf")), why);
                }
        }

        drift = NULL;
        (void) json_object_object_get_ex(reply, "drift", &drift);
        drift_print(stdout, drift, arg_verbose);
        return 0;
}

/* status's exit code: EXIT_DRIFT when the host differs from svffd's
 * records or its configuration did not reload, for scripts. */
static int status_exit(struct json_object *reply) {
        struct json_object *drift;

        if (jstr(reply, "config_error"))
                return EXIT_DRIFT;
        if (json_object_object_get_ex(reply, "drift", &drift) && json_object_is_type(drift, json_type_array) &&
            json_object_array_length(drift) > 0)
                return EXIT_DRIFT;
        return 0;
}

/* A Status reply: printed (as JSON with --json, nothing with --quiet),
 * then its exit code. */
static int status_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        if (error)
                return report_error(error, p);
        if (arg_json && !arg_quiet)
                print_json(stdout, p);
        else if (!arg_quiet)
                (void) print_status(p, NULL);
        return status_exit(p);
}

/* status --wait: the first Status with no operation in progress (as
 * while svffd applies its policies at start-up), asked for again every
 * WAIT_POLL_USEC until then or --timeout. */
#define WAIT_POLL_USEC (100 * USEC_PER_MSEC)

static int keep_settled(struct json_object *p, const char *error, bool continues, void *userdata) {
        struct json_object **ret = userdata, *ops;

        if (error)
                return report_error(error, p);
        if (json_object_object_get_ex(p, "operations", &ops) && json_object_array_length(ops) > 0)
                return EXIT_BUSY_POLL;
        *ret = json_object_get(p);
        return 0;
}

static int status_wait(void) {
        usec_t timeout = timeout_for(true), deadline = timeout > 0 ? svff_now_usec() + timeout : 0;

        for (;;) {
                _cleanup_json_ struct json_object *settled = NULL;
                int r = call_run(&(struct call) {
                        .method = "io.svff.Status",
                        .timeout = timeout_for(false),
                        .handle = keep_settled,
                        .userdata = &settled,
                });

                if (r != EXIT_BUSY_POLL)
                        return r != 0 ? r : status_reply(settled, NULL, false, NULL);
                if (deadline > 0 && svff_now_usec() >= deadline) {
                        _cleanup_json_ struct json_object *tp = json_object_new_object();

                        json_object_object_add(tp, "timeout_sec",
                                               json_object_new_int64((int64_t) (timeout / USEC_PER_SEC)));
                        cli_error("io.svff.ctl.Timeout", tp,
                                  "svffd still has operations in progress after --timeout=%llu; see them with "
                                  "'svffctl status'.", (unsigned long long) (timeout / USEC_PER_SEC));
                        return EXIT_UNREACHABLE;
                }
                (void) usleep(WAIT_POLL_USEC);
        }
}

static int cmd_status(int argc, char **argv) {
        if (argc > 1)
                return usage_error("status", "takes no arguments; see 'svffctl status --help'.");
        if (arg_wait)
                return status_wait();
        return call_run(&(struct call) {
                .method = "io.svff.Status",
                .timeout = timeout_for(false),
                .handle = status_reply,
        });
}

static void print_event_line(struct json_object *ev) {
        long long ts = jint(ev, "timestamp_usec", 0);
        time_t t = (time_t) (ts / 1000000);
        struct tm tm;
        char when[64];

        char zone[16] = "Z";

        /* ISO 8601, to the millisecond, with the zone's offset. */
        if (arg_utc)
                gmtime_r(&t, &tm);
        else {
                localtime_r(&t, &tm);
                strftime(zone, sizeof(zone), "%z", &tm);
        }
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        printf("%s.%03lld%s %s", when, ts / 1000 % 1000, zone, strna(jstr(ev, "event")));
        if (jstr(ev, "device"))
                printf(" %s", jstr(ev, "device"));
        if (jstr(ev, "pf") && (!jstr(ev, "device") || !streq(jstr(ev, "pf"), jstr(ev, "device"))))
                printf(" pf=%s", jstr(ev, "pf"));
        if (jstr(ev, "action"))
                printf(" %s", jstr(ev, "action"));
        if (jstr(ev, "domain"))
                printf(" domain=%s", jstr(ev, "domain"));
        if (jstr(ev, "guest_address")) {
                char ga[SVFF_PCI_ADDR_STRLEN];

                printf(" guest=%s", guest_address_display(jstr(ev, "guest_address"), ga, sizeof(ga)));
        }
        /* Two things are called mode in svffd's events: how a reconf
         * takes VFs off their domains, and how one VF was paused. */
        if (jstr(ev, "mode"))
                printf(" %s=%s", strncmp(strna(jstr(ev, "event")), "reconf-", 7) == 0 && !jstr(ev, "action")
                                 ? "reconf-mode" : "pause", jstr(ev, "mode"));
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

/* Monitor lines and another command's progress line can share a
 * terminal: each monitor line starts by erasing the line it lands on, so
 * the two never glue together (the progress line is redrawn below). */
static void print_event(struct json_object *ev) {
        if (arg_json)
                print_json(stdout, ev);
        else {
                if (isatty(STDOUT_FILENO))
                        fputs("\r\033[K", stdout);
                print_event_line(ev);
        }
        fflush(stdout);
}

static void notice(const char *fmt, ...) _printf_(1, 2);
static void notice(const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        if (arg_json) {
                _cleanup_json_ struct json_object *o = json_object_new_object();

                json_object_object_add(o, "notice", json_object_new_string(msg));
                print_json(stderr, o);
        } else
                fprintf(stderr, "%ssvffctl: %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", msg);
}

/* How svffd ended a Monitor stream, if it said so. */
struct monitor_end {
        bool shutdown;                  /* it is stopping */
        int64_t dropped;                /* > 0: we fell behind, that many events lost */
};

static int monitor_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        struct monitor_end *end = userdata;
        struct json_object *ev, *n;

        if (error)
                return report_error(error, p);
        if (json_object_object_get_ex(p, "event", &ev)) {
                const char *name = jstr(ev, "event");

                print_event(ev);
                if (name && streq(name, "shutdown"))
                        end->shutdown = true;
                else if (name && streq(name, "events-dropped")) {
                        end->dropped = json_object_object_get_ex(ev, "dropped", &n) ? json_object_get_int64(n) : 0;
                        if (end->dropped <= 0)
                                end->dropped = 1;
                }
        }
        return continues ? READ_MORE : 0;
}

/* Follows svffd's events across its restarts: when the connection ends,
 * connect again (every half second) and subscribe anew, unless
 * --no-reconnect. The first connection must work: a wrong socket is an
 * error, not a wait. */
static int cmd_monitor(int argc, char **argv) {
        bool reconnecting = false;

        if (argc > 1)
                return usage_error("monitor", "takes no arguments; see 'svffctl monitor --help'.");
        for (;;) {
                _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
                struct monitor_end end = {};
                int r;

                if (reconnecting) {
                        r = svff_varlink_client_connect(socket_path(), &c);
                        if (r < 0) {
                                usleep(500 * 1000);
                                continue;
                        }
                        notice("reconnected to svffd; events while it was away are not shown.");
                } else {
                        r = connect_daemon(&c);
                        if (r != 0)
                                return r;
                }
                r = svff_varlink_client_send(c, "io.svff.Monitor", NULL, true, false);
                for (; r >= 0;) {
                        _cleanup_json_ struct json_object *p = NULL;
                        _cleanup_free_ char *error = NULL;
                        bool continues;

                        r = svff_varlink_client_read(c, 0, &p, &error, &continues);
                        if (r >= 0 && !arg_json)
                                r = escape_strings(p);
                        if (r < 0)
                                break;
                        r = monitor_reply(p, error, continues, &end);
                        if (r == 0 && (end.shutdown || end.dropped > 0)) {
                                /* svffd's last word on this stream (it
                                 * stops, or we fell behind): it ended as
                                 * when the connection goes */
                                r = -ECONNRESET;
                                break;
                        }
                        if (r != READ_MORE)
                                return r;
                        r = 0;
                }
                if (end.dropped > 0) {
                        /* Whoever reads us did not keep up: the events in
                         * between are lost, which a script must not take
                         * for a quiet host. */
                        if (arg_no_reconnect) {
                                _cleanup_json_ struct json_object *dp = json_object_new_object();

                                json_object_object_add(dp, "dropped", json_object_new_int64(end.dropped));
                                cli_error("io.svff.ctl.EventsDropped", dp,
                                          "fell behind svffd's events: %lld were dropped and svffd ended the "
                                          "stream (its monitor_backlog_bytes, svff.conf(5)); read the output "
                                          "faster.", (long long) end.dropped);
                                return EXIT_DAEMON_ERROR;
                        }
                        notice("fell behind svffd's events: %lld were dropped; subscribing again "
                               "(--no-reconnect exits instead).", (long long) end.dropped);
                        reconnecting = true;
                        continue;
                }
                if (arg_no_reconnect && end.shutdown) {
                        _cleanup_json_ struct json_object *sp = json_object_new_object();

                        json_object_object_add(sp, "socket", json_object_new_string(socket_path()));
                        cli_error("io.svff.ctl.Unreachable", sp, "svffd at '%s' shut down.", socket_path());
                        return EXIT_UNREACHABLE;
                }
                if (arg_no_reconnect)
                        return transport_error(r);
                notice("lost svffd (%s); reconnecting (--no-reconnect exits instead).",
                       end.shutdown ? "it shut down" : strerror(-r));
                reconnecting = true;
        }
}

/* For "svffctl COMMAND PF NUMVFS" (init, reconf): the parameters pf and
 * numvfs in *ret, or a usage message and EXIT_USAGE. example is a VF
 * count for the message. */
static int pf_numvfs_params(int argc, char **argv, unsigned example, struct json_object **ret) {
        struct json_object *params;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;
        int r;

        if (argc != 3)
                return usage_error(argv[0], "needs a PF address and a VF count, e.g. 'svffctl %s 0000:03:00.0 %u'; "
                                   "see 'svffctl %s --help'.", argv[0], example, argv[0]);
        r = parse_device(argv[0], "PF", argv[1], pf);
        if (r != 0)
                return r;
        if (svff_numvfs_parse(argv[2], &numvfs) < 0)
                return usage_error(argv[0], "'%s' is not a VF count (0 to 65535).", argv[2]);
        params = json_object_new_object();
        json_object_object_add(params, "pf", json_object_new_string(pf));
        json_object_object_add(params, "numvfs", json_object_new_int64(numvfs));
        *ret = params;
        return 0;
}

/* A progress reply of init or reconf (continues): its event drawn,
 * true. The final one: the progress line cleared, false. */
static bool progress_reply(struct progress *progress, struct json_object *p, bool continues) {
        struct json_object *ev;

        if (continues) {
                if (json_object_object_get_ex(p, "event", &ev) && ev)
                        progress_event(progress, ev);
                return true;
        }
        progress_clear(progress);
        return false;
}

/* The call of init and reconf: their progress replies drawn as they
 * come (and redrawn while svffd is silent), the final one to handle,
 * whose userdata is the progress. params is borrowed. */
static int progress_call(const char *op, const char *method, struct json_object *params, reply_handler_t handle) {
        struct progress progress;

        progress_init(&progress, op, jstr(params, "pf"));
        return call_run(&(struct call) {
                .method = method,
                .params = params,
                .more = true,
                .changes = true,
                .timeout = timeout_for(true),
                .handle = handle,
                .userdata = &progress,
                .progress = &progress,
        });
}

static int init_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        if (progress_reply(userdata, p, continues))
                return READ_MORE;
        if (error)
                return report_error(error, p);
        if (arg_json)
                print_json(stdout, p);
        else {
                printf("PF %s: %lld VF%s on %s.\n", strna(jstr(p, "pf")), jint(p, "numvfs", 0),
                       plural_s(jint(p, "numvfs", 0)), strna(jstr(p, "driver")));
                if (jstr(p, "policy"))
                        printf("This init takes PF %s's VF count from policy '%s': no reload changes it now. "
                               "'svffctl init %s --policy' hands it back.\n", strna(jstr(p, "pf")),
                               jstr(p, "policy"), strna(jstr(p, "pf")));
        }
        return 0;
}

static int dry_run_reply(struct json_object *reply, const char *error, bool continues, void *userdata);

/* method's dry run with params (borrowed): the plan printed, or WHAT (init,
 * reconf, reprogram) would be refused. */
static int dry_run_call(const char *method, struct json_object *params, const char *what) {
        json_object_object_add(params, "dry_run", json_object_new_boolean(true));
        return call_run(&(struct call) {
                .method = method,
                .params = params,
                .timeout = timeout_for(false),
                .handle = dry_run_reply,
                .userdata = (void *) what,
        });
}

static int cmd_init(int argc, char **argv) {
        _cleanup_json_ struct json_object *params = NULL;
        int r;

        if (arg_policy) {
                /* The policy's count and driver: neither is given. */
                if (argc != 2 || arg_driver)
                        return usage_error("init", "--policy takes a PF address only (the count and driver are "
                                                   "the policy's), e.g. 'svffctl init 0000:03:00.0 --policy'.");
                char pf[SVFF_PCI_ADDR_STRLEN];

                r = parse_device(argv[0], "PF", argv[1], pf);
                if (r != 0)
                        return r;
                params = json_object_new_object();
                json_object_object_add(params, "pf", json_object_new_string(pf));
                json_object_object_add(params, "policy", json_object_new_boolean(true));
        } else {
                r = pf_numvfs_params(argc, argv, 4, &params);
                if (r != 0)
                        return r;
        }
        if (arg_driver)
                json_object_object_add(params, "driver", json_object_new_string(arg_driver));
        if (arg_dry_run)
                return dry_run_call("io.svff.Init", params, "init");

        return progress_call("init", "io.svff.Init", params, init_reply);
}

/* ---- config ---- */

/* Text from the files (keys, values) on a line of its own, control
 * characters escaped, line breaks kept. */
static void print_escaped(FILE *f, const char *text) {
        _cleanup_free_ char *e = svff_utf8_escape(text, true);

        fprintf(f, "%s\n", strna(e));
}

/* Policies asking more VFs than a PF they match can have, from the
 * inventory of the svffd that answers on the socket (none: nothing to
 * compare with, and config check needs no daemon). */
static int policy_totalvfs_warnings(const struct svff_config *c, char **warnings) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *vc = NULL;
        _cleanup_json_ struct json_object *reply = NULL;
        _cleanup_free_ char *error = NULL;
        struct json_object *pfs;

        if (svff_varlink_client_connect(socket_path(), &vc) < 0 ||
            svff_varlink_client_call(vc, "io.svff.List", NULL, 2 * USEC_PER_SEC, &reply, &error) < 0 || error ||
            !json_object_object_get_ex(reply, "pfs", &pfs) || !json_object_is_type(pfs, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(pfs); i++) {
                struct json_object *pf = json_object_array_get_idx(pfs, i);
                const char *addr = jstr(pf, "address"), *ven = jstr(pf, "vendor_id"), *dev = jstr(pf, "device_id");
                long long total = jint(pf, "totalvfs", -1);
                const struct svff_policy *pol;
                _cleanup_free_ char *name = NULL;

                if (!addr || !ven || !dev || total < 0)
                        continue;
                pol = svff_config_find_policy(c, addr, (unsigned) strtoul(ven, NULL, 16),
                                              (unsigned) strtoul(dev, NULL, 16), jstr(pf, "netdev"));
                if (!pol || pol->numvfs <= total)
                        continue;
                name = svff_utf8_escape(pol->name, false);
                if (svff_warnings_add(warnings, "%s: policy '%s' asks %d VFs of PF %s, which has at most %lld "
                                      "(sriov_totalvfs, as svffd lists it): its init there fails",
                                      strna(pol->origin), strna(name), pol->numvfs, addr, total) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* What a reload did, or would do to each PF. */
static int reload_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        struct json_object *pfs;
        _cleanup_free_ char *path = NULL;

        (void) continues;
        (void) userdata;
        if (error)
                return report_error(error, p);
        if (arg_json) {
                print_json(stdout, p);
                return 0;
        }
        path = svff_utf8_escape(strna(jstr(p, "path")), false);
        if (!json_object_get_boolean(json_object_object_get(p, "dry_run"))) {
                printf("svffd read %s again and applies its policies to the PFs present ('svffctl status "
                       "--wait' waits for that).\n", strna(path));
                return 0;
        }
        printf("A reload of %s would, per PF:\n", strna(path));
        pfs = json_object_object_get(p, "pfs");
        for (size_t i = 0; i < json_object_array_length(pfs); i++) {
                struct json_object *o = json_object_array_get_idx(pfs, i);
                _cleanup_free_ char *msg = svff_utf8_escape(strna(jstr(o, "message")), false);
                _cleanup_free_ char *pol = jstr(o, "policy") ? svff_utf8_escape(jstr(o, "policy"), false) : NULL;

                printf("  %s  %-9s %s%s%s%s\n", strna(jstr(o, "pf")), strna(jstr(o, "action")),
                       pol ? "(policy '" : "", pol ?: "", pol ? "') " : "", strna(msg));
        }
        if (json_object_array_length(pfs) == 0)
                printf("  (no SR-IOV PF present)\n");
        printf("Nothing was changed.\n");
        return 0;
}

static int cmd_config_reload(int argc) {
        _cleanup_json_ struct json_object *params = json_object_new_object();

        if (argc != 2)
                return usage_error("config", "'config reload' takes no arguments (svffd reads its own file).");
        if (!params)
                return EXIT_DAEMON_ERROR;
        if (arg_dry_run)
                json_object_object_add(params, "dry_run", json_object_new_boolean(true));
        return call_run(&(struct call) {
                .method = "io.svff.Reload",
                .params = params,
                .timeout = timeout_for(false),
                .handle = reload_reply,
        });
}

/* Checks the file svffd would read, or FILE, with its drop-ins (FILE.d/)
 * exactly as 'svffd --config FILE' reads them, with svffd's own parser:
 * no daemon involved. --effective prints the settings that result. 'config
 * reload' has svffd reload it instead. */
static int cmd_config(int argc, char **argv) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        const char *path;
        int r;

        if (argc >= 2 && streq(argv[1], "reload")) {
                if (arg_effective)
                        return usage_error("config", "--effective only applies to config check.");
                return cmd_config_reload(argc);
        }
        if (arg_dry_run)
                return usage_error("config", "--dry-run only applies to config reload.");
        if (arg_timeout_set)
                return usage_error("config", "--timeout does not apply: config check does not talk to svffd.");
        if (argc < 2 || !streq(argv[1], "check") || argc > 3)
                return usage_error("config", "use 'svffctl config check [FILE]' or 'svffctl config reload "
                                   "[--dry-run]'.");
        path = argc == 3 ? argv[2] : SVFFD_CONFIG_DEFAULT;
        r = svff_config_init(&c);
        if (r < 0) {
                fprintf(stderr, "svffctl: out of memory.\n");
                return EXIT_DAEMON_ERROR;
        }
        /* A FILE named must exist, as for svffd --config. */
        r = svff_config_load(&c, path, argc != 3, &err);
        /* and what it asks of this host that the host does not have */
        if (r >= 0 && (svff_config_host_warnings(&c, &c.warnings) < 0 ||
                       policy_totalvfs_warnings(&c, &c.warnings) < 0)) {
                svff_config_done(&c);
                fprintf(stderr, "svffctl: out of memory.\n");
                return EXIT_DAEMON_ERROR;
        }
        /* Keys in an old spelling still work: say so on stderr, so
         * that --effective and --json keep stdout clean. */
        if (r >= 0 && c.warnings && !arg_json)
                print_escaped(stderr, c.warnings);
        if (r >= 0 && arg_effective) {
                _cleanup_json_ struct json_object *e = svff_config_to_json(&c);

                if (!e) {
                        svff_config_done(&c);
                        fprintf(stderr, "svffctl: out of memory.\n");
                        return EXIT_DAEMON_ERROR;
                }
                print_json(stdout, e);
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
                /* a file with errors was not applied: no warnings to give */
                {
                        struct json_object *warnings = json_object_new_array();
                        _cleanup_free_ char *w = r >= 0 && c.warnings ? strdup(c.warnings) : NULL;

                        for (char *line = w ? strtok(w, "\n") : NULL; line; line = strtok(NULL, "\n"))
                                json_object_array_add(warnings, json_object_new_string(line));
                        json_object_object_add(o, "warnings", warnings);
                }
                json_object_object_add(o, "file", json_object_new_string(path));
                json_object_object_add(o, "valid", json_object_new_boolean(r >= 0));
                json_object_object_add(o, "errors", errors);
                json_object_object_add(o, "policies", pols);
                print_json(stdout, o);
        } else if (r < 0)
                print_escaped(stderr, svff_error_message(&err));
        else {
                printf("%s (and drop-ins): valid, %zu polic%s", path,
                       c.n_policies, c.n_policies == 1 ? "y" : "ies");
                for (size_t i = 0; i < c.n_policies; i++) {
                        _cleanup_free_ char *name = svff_utf8_escape(c.policies[i].name, false);

                        printf("%s%s", i ? ", " : ": ", strna(name));
                }
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
        char guest[24];

        (void) json_object_object_get_ex(reply, "assignment", &a);
        if (json_object_object_get_ex(a, "live", &v))
                live = json_object_get_boolean(v);
        if (json_object_object_get_ex(a, "config", &v))
                config = json_object_get_boolean(v);
        printf("VF %s %s domain '%s' at guest address %s (%s%s%s, alias %s)", strna(jstr(reply, "vf")), verb,
               strna(jstr(a, "domain")),
               guest_address_display(jstr(a, "guest_address"), guest, sizeof(guest)) ?: "chosen at start",
               live ? "live" : "", live && config ? "+" : "", config ? "config" : "", strna(jstr(a, "alias")));
        /* Pause's own word is "native pause" or "detach pause", never
         * "mode": --mode belongs to reconf. */
        if (jstr(reply, "mode")) {
                bool native = streq(jstr(reply, "mode"), "native"), pausing = streq(verb, "paused in");

                printf(", %s", native    ? (pausing ? "native pause: the guest keeps the device" : "native pause ended in place")
                               : pausing ? "detach pause: detached, guest address and alias reserved"
                                         : "detach pause ended: re-attached at the reserved guest address");
        }
        printf(".\n");
        return 0;
}

static int cmd_attach(int argc, char **argv) {
        struct json_object *params;
        char addr[SVFF_PCI_ADDR_STRLEN];
        int r;

        if ((arg_pf && argc != 2) || (!arg_pf && argc != 3))
                return usage_error("attach", "needs a VF and a domain ('svffctl attach 0000:03:00.4 vm1'), "
                                   "or --pf PF and a domain ('svffctl attach --pf 0000:03:00.0 vm1').");
        r = parse_device("attach", arg_pf ? "PF" : "VF", arg_pf ?: argv[1], addr);
        if (r == 0)
                r = check_domain("attach", argv[argc - 1]);
        if (r == 0 && arg_guest_address)
                r = check_guest_address("attach", arg_guest_address);
        if (r != 0)
                return r;
        params = json_object_new_object();
        json_object_object_add(params, arg_pf ? "pf" : "vf", json_object_new_string(addr));
        json_object_object_add(params, "domain", json_object_new_string(argv[argc - 1]));
        if (arg_live)
                json_object_object_add(params, "live", json_object_new_boolean(true));
        if (arg_config)
                json_object_object_add(params, "config", json_object_new_boolean(true));
        if (arg_guest_address)
                json_object_object_add(params, "guest_address", json_object_new_string(arg_guest_address));
        if (arg_failover)
                json_object_object_add(params, "failover", json_object_new_string(arg_failover));
        if (arg_class)
                json_object_object_add(params, "class", json_object_get(arg_class));
        if (arg_dry_run) {
                _cleanup_json_ struct json_object *p = params;

                return dry_run_call("io.svff.Attach", p, "attach");
        }
        return call_and_print("io.svff.Attach", params, true, print_assignment, "attached to");
}

/* A command on one VF, "svffctl COMMAND VF", that waits for svffd unless
 * --timeout. */
/* The parameters of a command that takes one VF address: {"vf": VF}. */
static int vf_params(int argc, char **argv, struct json_object **ret) {
        char vf[SVFF_PCI_ADDR_STRLEN];
        int r;

        if (argc != 2)
                return usage_error(argv[0], "needs one VF address, e.g. 'svffctl %s 0000:03:00.4'.", argv[0]);
        r = parse_device(argv[0], "VF", argv[1], vf);
        if (r != 0)
                return r;
        *ret = json_object_new_object();
        json_object_object_add(*ret, "vf", json_object_new_string(vf));
        return 0;
}

static int vf_call(int argc, char **argv, const char *method, reply_printer_t print, const void *userdata) {
        struct json_object *params;
        int r;

        r = vf_params(argc, argv, &params);
        if (r != 0)
                return r;
        if (arg_dry_run) {
                _cleanup_json_ struct json_object *p = params;

                return dry_run_call(method, p, argv[0]);
        }
        return call_and_print(method, params, true, print, userdata);
}

static int print_released(struct json_object *reply, const void *userdata) {
        struct json_object *v;
        bool reprobed = json_object_object_get_ex(reply, "reprobed", &v) && json_object_is_type(v, json_type_boolean) &&
                        json_object_get_boolean(v);

        if (jstr(reply, "detached_from"))
                printf("VF %s detached from domain '%s'.\n", strna(jstr(reply, "vf")), jstr(reply, "detached_from"));
        if (!reprobed)
                printf("VF %s is back on %s, its original driver; svffd forgot it.\n", strna(jstr(reply, "vf")),
                       jstr(reply, "driver") ?: "no driver (unbound)");
        else if (jstr(reply, "driver"))
                printf("VF %s had no driver before svffd; re-probed, it is on %s, the kernel's choice; svffd "
                       "forgot it.\n", strna(jstr(reply, "vf")), jstr(reply, "driver"));
        else
                printf("VF %s had no driver before svffd, and none claims it on a re-probe: it is unbound (load "
                       "its driver's module, then 'echo %s > /sys/bus/pci/drivers_probe'); svffd forgot it.\n",
                       strna(jstr(reply, "vf")), strna(jstr(reply, "vf")));
        return 0;
}

static int print_detached(struct json_object *reply, const void *userdata) {
        printf("VF %s detached from domain '%s'.\n", strna(jstr(reply, "vf")), strna(jstr(reply, "domain")));
        return 0;
}

static int cmd_release(int argc, char **argv) {
        struct json_object *params;
        int r;

        r = vf_params(argc, argv, &params);
        if (r != 0)
                return r;
        if (arg_force)
                json_object_object_add(params, "force", json_object_new_boolean(true));
        if (arg_dry_run) {
                _cleanup_json_ struct json_object *p = params;

                return dry_run_call("io.svff.Release", p, "release");
        }
        return call_and_print("io.svff.Release", params, true, print_released, NULL);
}

static int cmd_release(int argc, char **argv);

static int cmd_detach(int argc, char **argv) {
        /* --release: off the domain, then given back as release does
         * (the device class undoes its set-up): Release with force. */
        if (arg_release) {
                if (arg_dry_run)
                        return usage_error("detach", "--dry-run plans the detach alone: drop --release, or run "
                                                     "'svffctl release --force --dry-run VF'.");
                arg_force = true;
                return cmd_release(argc, argv);
        }
        return vf_call(argc, argv, "io.svff.Detach", print_detached, NULL);
}

static int cmd_pause(int argc, char **argv) {
        return vf_call(argc, argv, "io.svff.Pause", print_assignment, "paused in");
}

static int cmd_unpause(int argc, char **argv) {
        return vf_call(argc, argv, "io.svff.Unpause", print_assignment, "unpaused in");
}

/* ---- reconf ---- */

/* svffd's outcome "released" is what --force does to an assignment:
 * said as "dropped", so it is not taken for the release command (which
 * gives a VF back to its original driver). */
static const char *outcome_display(const char *o) {
        return o && streq(o, "released") ? "dropped (--force)" : strna(o);
}

/* One line per assignment: whether its domain has the VF, and why not. */
static void print_outcomes(FILE *f, struct json_object *p) {
        struct json_object *a;

        if (!json_object_object_get_ex(p, "assignments", &a) || !a || json_object_array_length(a) == 0)
                return;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *o = json_object_array_get_idx(a, i), *v;
                bool has = json_object_object_get_ex(o, "has_vf", &v) && json_object_get_boolean(v);
                char guest[24];

                char off[48] = "";

                if (json_object_object_get_ex(o, "device_off_msec", &v) && v)
                        snprintf(off, sizeof(off), " (device off for %.1f s)", json_object_get_int64(v) / 1000.0);
                fprintf(f, "  %-3s VF %lld %s  domain '%s' at %s: %s%s%s%s\n", has ? "OK" : "NO",
                        jint(o, "index", 0), strna(jstr(o, "vf")), strna(jstr(o, "domain")),
                        guest_address_display(jstr(o, "guest_address"), guest, sizeof(guest)) ?: "-",
                        outcome_display(jstr(o, "outcome")), off, jstr(o, "message") ? ": " : "",
                        jstr(o, "message") ?: "");
        }
}

/* What a guest's agent said of its NVMe heads, against the window the
 * plan predicts. */
static void print_guest_agent(struct json_object *o) {
        const char *agent = jstr(o, "agent"), *head = jstr(o, "agent_head");
        long long window = (jint(o, "predicted_msec", 0) + 999) / 1000;
        _cleanup_free_ char *why = NULL, *name = NULL;

        if (!agent)
                return;
        if (streq(agent, "unanswered")) {
                why = svff_utf8_escape(strna(jstr(o, "agent_error")), false);
                printf("    guest readiness unknown: its guest agent did not answer (%s)\n", strna(why));
                return;
        }
        if (!head && jstr(o, "agent_subnqn")) {
                _cleanup_free_ char *nqn = svff_utf8_escape(jstr(o, "agent_subnqn"), false);

                printf("    guest NOT ready: its guest agent finds no NVMe head of namespace %lld of %s with "
                       "delayed_removal_secs (Linux < 6.16, multipath off, or the namespace not seen); it loses "
                       "its disk in the reconf\n", jint(o, "agent_nsid", 0), strna(nqn));
                return;
        }
        if (!head) {
                printf("    guest NOT ready: its guest agent finds no NVMe head with delayed_removal_secs "
                       "(Linux < 6.16, or multipath off); it loses its disk in the reconf\n");
                return;
        }
        name = svff_utf8_escape(head, false);
        if (json_object_get_boolean(json_object_object_get(o, "guest_ready")))
                printf("    guest ready: delayed removal %lld s (%s) >= window %lld s, as its guest agent reads it\n",
                       jint(o, "agent_delayed_removal_sec", 0), strna(name), window);
        else
                printf("    guest NOT ready: delayed removal %lld s (%s) < window %lld s, as its guest agent reads "
                       "it; it loses its disk in the reconf\n", jint(o, "agent_delayed_removal_sec", 0),
                       strna(name), window);
}

/* How each assignment's guest sees the reconf, and the unplug deadline. */
static void print_guests(struct json_object *reply) {
        static const struct { const char *key, *text; } modes[] = {
                { "acpi", "ACPI hotplug" },
                { "native", "native PCIe hotplug (>= 6 s per unplug)" },
                { "none", "no hotplug" },
                { "offline", "not running or not live: no guest sees it" },
                { "unknown", "hotplug unknown" },
        };
        struct json_object *g, *d;

        if (!json_object_object_get_ex(reply, "guests", &g) || !g || json_object_array_length(g) == 0)
                return;
        printf("\nGuests");
        if (json_object_object_get_ex(reply, "deadlines", &d) && d)
                printf(" (each unplug may take %.0f s: reconf_detach_timeout_sec)", jint(d, "detach_msec", 0) / 1000.0);
        printf(":\n");
        for (size_t i = 0; i < json_object_array_length(g); i++) {
                struct json_object *o = json_object_array_get_idx(g, i), *v;
                const char *h = strna(jstr(o, "hotplug")), *text = h;
                char guest[24];

                for (size_t k = 0; k < ELEMENTSOF(modes); k++)
                        if (streq(h, modes[k].key))
                                text = modes[k].text;
                printf("  VF %s  domain '%s' at %s: %s%s%s%s%s%s%s", strna(jstr(o, "vf")), strna(jstr(o, "domain")),
                       guest_address_display(jstr(o, "guest_address"), guest, sizeof(guest)) ?: "-",
                       json_object_get_boolean(json_object_object_get(o, "nvme_head")) ? "NVMe head kept, " : "",
                       jstr(o, "failover") ? "failover pair with " : "", jstr(o, "failover") ?: "",
                       jstr(o, "failover") ? ", " : "", text, jstr(o, "port") ? " on " : "", jstr(o, "port") ?: "");
                if (!streq(h, "offline"))
                        printf("; device off for about %.1f s%s", jint(o, "predicted_msec", 0) / 1000.0,
                               streq(strna(jstr(o, "predicted_from")), "recent") ? " (as the PF's last reconf took)"
                                                                                : "");
                printf("\n");
                if (json_object_object_get_ex(o, "guest_needs", &v) && v)
                        printf("    the guest needs %s\n", json_object_get_string(v));
                print_guest_agent(o);
        }
}

/* The device class's steps per VF, as the class planned them. */
static void print_class_plan(struct json_object *reply) {
        struct json_object *cp, *steps;

        if (!json_object_object_get_ex(reply, "class_plan", &cp) || !cp)
                return;
        printf("\nDevice class %s:", strna(jstr(cp, "class")));
        if (jstr(cp, "refused")) {
                printf(" refused: %s\n", jstr(cp, "refused"));
                return;
        }
        printf(" %s\n", jstr(cp, "needs") ?: "");
        if (!json_object_object_get_ex(cp, "steps", &steps) || !json_object_is_type(steps, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(steps); i++) {
                struct json_object *st = json_object_array_get_idx(steps, i), *vf = NULL;
                char who[32] = "PF";

                if (json_object_object_get_ex(st, "vf", &vf) && vf)
                        snprintf(who, sizeof(who), "VF %lld", (long long) json_object_get_int64(vf));
                printf("  %-6s %-16s %s%s\n", who, strna(jstr(st, "action")), strna(jstr(st, "detail")),
                       json_object_get_boolean(json_object_object_get(st, "disruptive")) ? " (disruptive)" : "");
        }
}

static int dry_run_reply(struct json_object *reply, const char *error, bool continues, void *userdata) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        struct json_object *jp, *v;
        bool ok;

        if (error)
                return report_error(error, reply);
        ok = json_object_object_get_ex(reply, "executable", &v) && json_object_get_boolean(v);
        if (arg_json)
                print_json(stdout, reply);
        else if (!json_object_object_get_ex(reply, "plan", &jp) && ok && jstr(reply, "message"))
                /* Nothing to plan: the PF has the count already. */
                printf("%s\n", jstr(reply, "message"));
        else if (!json_object_object_get_ex(reply, "plan", &jp) || svff_reconf_plan_from_json(jp, &plan) < 0) {
                cli_error("io.svff.ctl.BadReply", NULL, "svffd sent a plan this svffctl cannot read.");
                return EXIT_DAEMON_ERROR;
        } else {
                svff_reconf_plan_print(plan, stdout);
                print_guests(reply);
                print_class_plan(reply);
                if (jstr(reply, "policy"))
                        printf("\nThis init would take PF %s's VF count from policy '%s': no reload would change "
                               "it then. 'svffctl init %s --policy' hands it back.\n", strna(jstr(reply, "pf")),
                               jstr(reply, "policy"), strna(jstr(reply, "pf")));
        }
        if (!ok) {
                cli_error("io.svff.ctl.WouldBeRefused", NULL, "this %s would be refused; see the plan.",
                          userdata ? (const char *) userdata : "reconf");
                return EXIT_DAEMON_ERROR;
        }
        return 0;
}

static int reconf_reply(struct json_object *p, const char *error, bool continues, void *userdata) {
        int r;

        if (progress_reply(userdata, p, continues))
                return READ_MORE;
        if (error) {
                r = report_error(error, p);
                if (!arg_json)
                        print_outcomes(stderr, p);
                else
                        print_json(stdout, p);
                return r;
        }
        if (arg_json)
                print_json(stdout, p);
        else {
                printf("%s.\n", strna(jstr(p, "message")));
                print_outcomes(stdout, p);
        }
        return 0;
}

static int cmd_reconf(int argc, char **argv) {
        _cleanup_json_ struct json_object *params = NULL;
        int r;

        r = pf_numvfs_params(argc, argv, 8, &params);
        if (r != 0)
                return r;
        if (arg_mode && svff_reconf_mode_from_string(arg_mode) < 0)
                return usage_error("reconf", "--mode is 'pause' or 'detach', not '%s'.", arg_mode);
        if (arg_mode)
                json_object_object_add(params, "mode", json_object_new_string(arg_mode));
        if (arg_force)
                json_object_object_add(params, "force", json_object_new_boolean(true));
        if (arg_reprogram)
                json_object_object_add(params, "reprogram", json_object_new_string(arg_reprogram));
        if (arg_cycle)
                json_object_object_add(params, "cycle", json_object_new_boolean(true));
        if (arg_dry_run)
                return dry_run_call("io.svff.Reconf", params, "reconf");

        return progress_call("reconf", "io.svff.Reconf", params, reconf_reply);
}

/* ---- reprogram ---- */

static int cmd_reprogram(int argc, char **argv) {
        _cleanup_json_ struct json_object *params = NULL;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;
        int r;

        if (argc != 3)
                return usage_error(argv[0], "needs a PF address and an image, e.g. 'svffctl reprogram 0000:03:00.0 "
                                   "/var/lib/svff/images/shell.bit'; see 'svffctl reprogram --help'.");
        r = parse_device(argv[0], "PF", argv[1], pf);
        if (r != 0)
                return r;
        if (argv[2][0] != '/')
                return usage_error(argv[0], "the image '%s' is not an absolute path (svffd checks it against its "
                                   "flash_image_dir).", argv[2]);
        params = json_object_new_object();
        if (!params)
                return EXIT_FAILURE;
        json_object_object_add(params, "pf", json_object_new_string(pf));
        json_object_object_add(params, "image", json_object_new_string(argv[2]));
        if (arg_numvfs) {
                if (svff_numvfs_parse(arg_numvfs, &numvfs) < 0)
                        return usage_error(argv[0], "--numvfs '%s' is not a VF count (0 to 65535).", arg_numvfs);
                json_object_object_add(params, "numvfs", json_object_new_int64(numvfs));
        }
        if (arg_mode && svff_reconf_mode_from_string(arg_mode) < 0)
                return usage_error("reprogram", "--mode is 'pause' or 'detach', not '%s'.", arg_mode);
        if (arg_mode)
                json_object_object_add(params, "mode", json_object_new_string(arg_mode));
        if (arg_force)
                json_object_object_add(params, "force", json_object_new_boolean(true));
        if (arg_dry_run)
                return dry_run_call("io.svff.Reprogram", params, "reprogram");
        return progress_call("reprogram", "io.svff.Reprogram", params, reconf_reply);
}

/* ---- argv ---- */

struct command {
        const char *name;
        const char *summary;    /* one line, for 'svffctl help' */
        const char *usage;
        const char *help;
        int (*fn)(int argc, char **argv);
        bool has_driver;
        bool has_force;         /* --force alone: release */
        bool has_release;       /* --release: detach */
        bool has_policy;        /* --policy: init */
        bool has_attach_options;
        bool has_reconf_options;
        bool has_dry_run;       /* --dry-run without reconf's other options: init */
        bool has_columns;
        bool has_reconnect;
        bool has_verbose;       /* -v: status's every drift */
        bool no_timeout;        /* --timeout cannot apply: refused */
};

static const struct command commands[] = {
        { "list", "Show the PFs and their VFs: counts, assignments, class state",
          "list [PF|VF...] [--domain=D] [-o [+]COL,...] [--json]",
          "List the SR-IOV PFs and their VFs in one table: driver, VF count, the domain,\n"
          "guest address and state of each assigned VF, and its device class's state.\n"
          "Addresses pick PFs (whole) and VFs (under their PF's row); --domain keeps the\n"
          "VFs assigned to a domain, by name or UUID. --json is cut down the same way.\n"
          "-o picks the columns, -o +COL adds one (e.g. -o +owner,iface). On a terminal\n"
          "the table fits its width; a pipe gets it whole.", cmd_list, .has_columns = true },
        { "status", "Show svffd's state, operations in progress and drift",
          "status [-v] [-q] [--wait] [--json]",
          "Show svffd's version, uptime, store path and generation, libvirt's\n"
          "connection, the operations in progress, each PF's VF count, owner and VF\n"
          "limit, and any drift between the store and the host: per PF, one line per\n"
          "kind with a count and the one next step (-v or --json: every device).\n"
          "--wait first waits until no operation is in progress, as while svffd applies\n"
          "its policies at start-up (no longer than --timeout, when given).\n"
          "Exits 5 when there is drift or the last configuration reload failed; -q\n"
          "prints nothing, for scripts.",
          cmd_status, .has_verbose = true },
        { "show", "Show a PF's device class and what it can still give its VFs",
          "show PF [--json]",
          "Show PF's device class as the device answers now, and what the PF holds and\n"
          "can still give its VFs: an NVMe PF's free flexible queue (VQ) and interrupt\n"
          "(VI) resources, its secondary controllers and namespaces; a NIC PF's\n"
          "interface and its VFs' MACs, VLANs and trust; a QDMA PF's queues, the\n"
          "budget and what is free. Also the settings the PF's policy gives its class.\n"
          "A bare PCI function has no class. Refused while an operation's step uses\n"
          "the class: ask again when it ends.", cmd_show },
        { "init", "Set a PF's VF count, with no VF assigned",
          "init PF NUMVFS [--driver DRIVER] [--dry-run] [--json] | init PF --policy [--dry-run]",
          "Create NUMVFS VFs on PF (through 0 when the count changes), bind each to\n"
          "DRIVER (default: svffd's vf_driver, normally vfio-pci) and record the desired\n"
          "state and each VF's original driver. An unknown driver, more VFs than the PF\n"
          "supports, or another count or driver over assigned VFs is refused before\n"
          "anything changes. The operator then owns the PF's VF count: no policy changes\n"
          "it, on reload or otherwise. --policy applies the PF's policy instead and hands\n"
          "the count back to it. Shows progress on a terminal (one line\n"
          "per phase otherwise); Ctrl-C leaves the init running in svffd (exit 130).\n"
          "--dry-run prints the plan (every step, the device class's too) after the same\n"
          "refusals, and changes nothing. Needs root or the admin group.", cmd_init, .has_driver = true,
          .has_policy = true, .has_dry_run = true },
        { "release", "Give a VF back to the host, svff no longer managing it",
          "release VF [--force] [--dry-run] [--json]",
          "Give VF back to its original driver (the one it had before svff bound it),\n"
          "and forget it. A VF assigned to a domain is refused (the domain could not\n"
          "start without it): detach it first, or use --force, which detaches it from\n"
          "its domain (as 'svffctl detach' does) first. --dry-run prints the plan after\n"
          "the same refusals, and changes nothing. Needs root or the admin group.", cmd_release,
          .has_force = true, .has_dry_run = true },
        { "monitor", "Follow svffd's events as they happen",
          "monitor [--no-reconnect] [--utc] [--json]",
          "Print svffd's events as they happen, one per line (--json: one JSON object\n"
          "per line), until interrupted, each stamped with the local time and its\n"
          "offset from UTC (--utc: in UTC). When svffd restarts, monitor connects again\n"
          "and says so on stderr; --no-reconnect exits (status 3) instead.", cmd_monitor,
          .has_reconnect = true, .no_timeout = true },
        { "attach", "Assign a VF to a libvirt domain",
          "attach VF|--pf PF DOMAIN [--live] [--config] [--guest-address BB:SS.F] [--namespace NSID]"
          " [--failover STANDBY] [--dry-run]",
          "Assign VF (or, with --pf, any free VF of PF on vfio-pci) to the libvirt domain\n"
          "DOMAIN (name or UUID) as a managed='no' vfio hostdev. The VF must be on\n"
          "vfio-pci, its IOMMU group viable and used by no other domain. By default the\n"
          "device goes live if the domain runs, and into its definition (config) if it\n"
          "is persistent; --live and --config choose explicitly. --guest-address puts it\n"
          "at that guest PCI address (not 00:00.x, the guest's host bridge); otherwise\n"
          "libvirt picks one, which is recorded. --namespace attaches NVMe namespace\n"
          "NSID to the VF's secondary controller first (its device class provisions it).\n"
          "--mac, --vlan V[:QOS[:PROTO]], --trust on|off, --spoofchk on|off, --link-state\n"
          "auto|enable|disable, --max-tx-rate and --min-tx-rate (Mbps) set a NIC VF's\n"
          "admin settings in its PF before the domain gets it, and again after every reconf.\n"
          "--failover pairs a NIC VF with the domain's virtio-net standby of that MAC or\n"
          "alias (<teaming type='persistent'/>): the VF goes in as <interface\n"
          "type='hostdev'> with the standby's MAC and <teaming type='transient'>, so the\n"
          "guest's traffic stays on the standby while a reconf unplugs the VF.\n"
          "--dry-run checks all that and prints the plan, changing nothing.\n"
          "Needs root or the admin group.",
          cmd_attach, .has_attach_options = true, .has_dry_run = true },
        { "detach", "Take a VF from its domain, back to the pool",
          "detach VF [--release] [--dry-run]",
          "Remove VF from its domain, waiting for the guest to let go of it (svffd's\n"
          "detach_timeout_sec). If the guest does not, the VF stays 'detaching' and the\n"
          "command fails; run it again later. --release then runs 'svffctl release' on\n"
          "the VF (its device class undoes what it set up). --dry-run prints the plan.",
          cmd_detach, .has_release = true, .has_dry_run = true },
        { "pause", "Take a VF from its running domain, its place kept",
          "pause VF [--dry-run]",
          "Pause VF's assignment: a native pause when the domain's QEMU offers the\n"
          "device-pause command (the guest keeps seeing the device), else a detach pause\n"
          "(detached, its guest address and alias reserved). Prints which it was.\n"
          "--dry-run prints the plan.", cmd_pause, .has_dry_run = true },
        { "unpause", "Give a paused VF back to its domain",
          "unpause VF [--dry-run]",
          "End a pause: in place for a native pause, else by re-attaching the VF at the\n"
          "reserved guest address with the same alias. --dry-run prints the plan.",
          cmd_unpause, .has_dry_run = true },
        { "reconf", "Change a PF's VF count, every domain keeping its VF",
          "reconf PF NUMVFS [--mode pause|detach] [--dry-run] [--force] [--cycle] [--json]",
          "Change PF's VF count to NUMVFS while every domain keeps its VFs. --mode says\n"
          "how reconf takes the VFs off their domains: pause (the default: each VF gets a\n"
          "native or a detach pause) or detach (every assigned VF detached), in parallel\n"
          "across domains; then the count is set through 0, the VFs bound to vfio-pci\n"
          "and every assignment put back at the same VF index, guest address and alias.\n"
          "Assignments whose VF index is not below NUMVFS are refused unless --force,\n"
          "which drops them (detached for good and forgotten; their VFs are destroyed).\n"
          "--dry-run prints the plan (every assignment, its fate, every step) and changes\n"
          "nothing. A failure ends in the best consistent state and names each domain\n"
          "that does not have its VF, and why. Progress and Ctrl-C as for init. Needs\n"
          "root or the admin group (not for --dry-run). --reprogram IMAGE makes it a\n"
          "reprogram to NUMVFS VFs (see reprogram). At the count PF has already it does\n"
          "nothing and says so; --cycle runs the full cycle through 0 anyway.",
          cmd_reconf, .has_reconf_options = true },
        { "reprogram", "Flash a PF with a new image, every domain keeping its VF",
          "reprogram PF IMAGE [--numvfs N] [--mode pause|detach] [--dry-run] [--force] [--json]",
          "Write IMAGE to PF (an FPGA's bitstream) inside the reconf window: every\n"
          "assignment quiesced as reconf does, the count set to 0, the PF's driver\n"
          "unbound and the PF removed, svffd's flash_hook run on IMAGE (a file under\n"
          "flash_image_dir), the bus rescanned until the PF is back at its address, its\n"
          "identity checked against its policy's reprogram_ids, then N VFs (default:\n"
          "the count it has), vfio-pci and every assignment back at its guest address.\n"
          "A hook that fails or passes flash_timeout_sec, or a PF that comes back as\n"
          "its policy does not allow, leaves the PF 'reprogram interrupted' with its\n"
          "assignments paused: run reprogram again, or reconf to take the PF as it is.\n"
          "Progress and Ctrl-C as for init. Needs root or the admin group (--dry-run\n"
          "too).", cmd_reprogram, .has_reconf_options = true },
        { "config", "Check svffd's configuration file, or have svffd reload it",
          "config check [FILE] [--effective] [--json] | config reload [--dry-run] [--json]",
          "Validate FILE (default: svffd's config file) and its drop-ins FILE.d/*.conf,\n"
          "as 'svffd --config FILE' reads them, with svffd's own parser; every problem\n"
          "is named as FILE:LINE: key 'KEY' .... --effective prints the settings that\n"
          "result, as JSON. Exit status 1 when invalid. Warns, exit status 0, about what\n"
          "this host lacks (the admin group, a VF driver, a libvirt URI of the QEMU\n"
          "driver), a policy another one shadows, and, when svffd answers on --socket,\n"
          "a policy asking more VFs than a PF it matches can have. Needs no daemon.\n"
          "'config reload' has svffd read its file again and apply its policies, as\n"
          "'systemctl reload svffd' does; with --dry-run it says, per PF present, what\n"
          "the reload would do (init, reprogram, refused, nothing, and why), and changes\n"
          "nothing. A file that does not read is refused, svffd keeping its settings.\n"
          "Needs root or the admin group.",
          cmd_config, .has_dry_run = true },
};

static const char exit_status_help[] =
        "Exit status: 0 success, 1 svffd reported a failure, 2 usage error, 3 svffd\n"
        "unreachable or --timeout passed, 4 permission denied, 5 status: drift or a\n"
        "failed configuration reload, 130 interrupted (the operation continues in\n"
        "svffd).\n";

static void help(void) {
        printf("Usage: svffctl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Manage SR-IOV virtual functions through svffd.\n"
               "\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                printf("  %-10s %s\n", commands[i].name, commands[i].summary);
        printf("  %-10s %s\n\n", "help", "Show this, or a command's help");
        printf("'svffctl help COMMAND' shows a command's arguments and options.\n");
        printf("\n"
               "Options (before or after the command):\n"
               "  -h --help          Show help (for a command: svffctl COMMAND --help)\n"
               "     --socket=PATH   svffd's socket (default $SVFF_SOCKET or\n"
               "                     %s)\n"
               "     --json          Print JSON on stdout; errors as JSON on stderr\n"
               "     --timeout=SEC   Give up on svffd after SEC seconds (0: never). Default:\n"
               "                     30 for list, status and reconf --dry-run; the other\n"
               "                     commands wait for svffd. Refused by monitor and config.\n"
               "  -o --output=COL,...  list: the columns to show, +COL,... to add (see 'svffctl\n"
               "                     list --help')\n"
               "     --no-reconnect  monitor: exit when svffd goes away\n"
               "  -v --verbose       status: every drift, not the summary per PF\n"
               "  -q --quiet         status: print nothing, only the exit status\n"
               "     --version       Show the version\n"
               "\n%s",
               SOCKET_DEFAULT, exit_status_help);
}

static void command_help(const struct command *c) {
        printf("Usage: svffctl %s\n\n%s\n\n"
               "Options:\n"
               "  --json          Print JSON on stdout; errors as JSON on stderr\n"
               "%s%s%s%s%s%s%s%s%s%s"
               "  --socket=PATH   svffd's socket\n",
               c->usage, c->help,
               c->fn == cmd_config ? "  --effective     Print the settings that result, as JSON\n"
                                   : c->no_timeout ? "" : "  --timeout=SEC   Give up on svffd after SEC seconds\n",
               c->has_driver ? "  --driver=NAME   Bind the VFs to NAME instead of svffd's default\n" : "",
               c->has_attach_options ? "  --pf=PF         Take any free VF of PF\n"
                                       "  --live          Attach to the running domain\n"
                                       "  --config        Attach to the domain's persistent definition\n"
                                       "  --guest-address=BB:SS.F  Guest PCI address\n"
                                       "  --namespace=NSID  NVMe: the namespace the VF reaches\n"
                                       "  --failover=STANDBY  NIC: pair with the virtio-net standby of that MAC\n"
                                       "                  or alias (<teaming type='persistent'/>)\n"
                                       "  --mac=MAC, --vlan=V[:QOS[:PROTO]], --trust=on|off, --spoofchk=on|off,\n"
                                       "  --link-state=auto|enable|disable, --max-tx-rate=R, --min-tx-rate=R\n"
                                       "                  NIC: the VF's admin settings in its PF\n" : "",
               c->has_force ? "  --force         Detach the VF from its domain first\n" : "",
               c->has_release ? "  --release       Then 'svffctl release' the VF\n" : "",
               c->has_policy ? "  --policy        Apply the PF's policy; it owns the count again\n" : "",
               c->has_dry_run ? "  --dry-run       Print the plan, change nothing\n" : "",
               streq(c->name, "reprogram") ? "  --numvfs=N      The VF count afterwards (default: the count now)\n" :
               streq(c->name, "reconf") ? "  --reprogram=IMAGE  Reprogram the PF with IMAGE on the way\n"
                                          "  --cycle         At the count the PF has, go through 0 anyway\n" : "",
               c->has_reconf_options ? "  --mode=MODE     How VFs leave their domains: pause (default) or detach\n"
                                       "  --dry-run       Print the plan, change nothing\n"
                                       "  --force         Drop the assignments the new count removes\n" : "",
               c->has_columns ? "  -o, --output=COL,...  The columns to show, in that order; +COL,... adds them\n"
                                "  --domain=D      Only the VFs assigned to domain D (name or UUID)\n" :
               c->has_reconnect ? "  --no-reconnect  Exit when svffd goes away instead of reconnecting\n"
                                  "  --utc           Times in UTC, not the local zone\n" :
               c->has_verbose ? "  -v, --verbose   Every drift, not the summary per PF\n"
                                "  -q, --quiet     Print nothing: the exit status says it\n"
                                "  --wait          Wait until no operation is in progress\n" : "");
        if (c->has_columns) {
                putchar('\n');
                list_columns_help(stdout);
        }
        printf("\n%s", exit_status_help);
}

/* The command named in argv, for messages before options are parsed. */
static const char *find_command_name(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                for (size_t k = 0; k < ELEMENTSOF(commands); k++)
                        if (streq(argv[i], commands[k].name))
                                return commands[k].name;
        return NULL;
}

/* getopt took "-1" for an option: say what it is instead. */
static int bad_option(int o, int argc, char **argv) {
        const char *cmd = find_command_name(argc, argv), *arg = argv[optind - 1];

        if (o == ':')
                return usage_error(cmd, "option '%s' needs a value; see 'svffctl --help'.", arg);
        if (optopt >= '0' && optopt <= '9') {
                for (int i = 1; i < argc; i++)
                        if (argv[i][0] == '-' && argv[i][1] >= '0' && argv[i][1] <= '9') {
                                arg = argv[i];
                                break;
                        }
                if (cmd && (streq(cmd, "init") || streq(cmd, "reconf")))
                        return usage_error(cmd, "'%s' is not a VF count (0 to 65535).", arg);
                return usage_error(cmd, "'%s' is not an option or an argument here; see 'svffctl --help'.", arg);
        }
        if (optopt)
                return usage_error(cmd, "unknown option '-%c'; see 'svffctl --help'.", optopt);
        return usage_error(cmd, "unknown option '%s'; see 'svffctl --help'.", arg);
}

/* attach's NIC options, mapped onto Attach's "class" object under the
 * NIC class's own keys; the class checks the values (range, unicast MAC)
 * before anything is touched. */
static int nic_option(const char *opt, const char *arg) {
        struct json_object *v = NULL;

        if (!arg_class && !(arg_class = json_object_new_object()))
                return -ENOMEM;
        if (streq(opt, "vlan")) {
                unsigned long vlan, qos = 0;
                char *end, *proto = NULL;

                errno = 0;
                vlan = strtoul(arg, &end, 10);
                if (errno || end == arg || vlan > 4095 || (*end && *end != ':'))
                        return usage_error("attach", "--vlan '%s': expected VLAN[:QOS[:PROTO]], VLAN 0 to 4095.", arg);
                if (*end == ':') {
                        const char *q = end + 1;
                        qos = strtoul(q, &end, 10);
                        if (errno || end == q || qos > 7 || (*end && *end != ':'))
                                return usage_error("attach", "--vlan '%s': the QoS is 0 to 7.", arg);
                        if (*end == ':')
                                proto = end + 1;
                        json_object_object_add(arg_class, "qos", json_object_new_int((int) qos));
                }
                if (proto) {
                        if (strcasecmp(proto, "802.1Q") && strcasecmp(proto, "802.1ad"))
                                return usage_error("attach", "--vlan '%s': the protocol is 802.1Q or 802.1ad.", arg);
                        json_object_object_add(arg_class, "vlan_proto", json_object_new_string(proto));
                }
                v = json_object_new_int((int) vlan);
        } else if (streq(opt, "trust") || streq(opt, "spoofchk")) {
                if (!streq(arg, "on") && !streq(arg, "off"))
                        return usage_error("attach", "--%s '%s': expected on or off.", opt, arg);
                v = json_object_new_boolean(streq(arg, "on"));
        } else if (streq(opt, "max-tx-rate") || streq(opt, "min-tx-rate")) {
                unsigned long rate;
                char *end;

                errno = 0;
                rate = strtoul(arg, &end, 10);
                if (errno || end == arg || *end || rate > UINT32_MAX || arg[0] == '-')
                        return usage_error("attach", "--%s '%s': expected Mbps (0: no limit).", opt, arg);
                v = json_object_new_int64((int64_t) rate);
        } else
                v = json_object_new_string(arg);      /* mac, link-state */
        /* The option is kebab-case as every option is; the setting it
         * becomes snake_case as every JSON key. */
        {
                _cleanup_free_ char *key = svff_json_key_snake(opt);

                if (!key) {
                        json_object_put(v);
                        fprintf(stderr, "svffctl: out of memory.\n");
                        return EXIT_DAEMON_ERROR;
                }
                json_object_object_add(arg_class, key, v);
        }
        return 0;
}

int main(int argc, char **argv) {
        enum { ARG_SOCKET = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_DRIVER, ARG_VERSION, ARG_LIVE, ARG_CONFIG,
               ARG_GUEST_ADDRESS, ARG_PF, ARG_MODE, ARG_DRY_RUN, ARG_FORCE, ARG_CYCLE, ARG_POLICY, ARG_NO_RECONNECT, ARG_WAIT, ARG_EFFECTIVE,
               ARG_NAMESPACE, ARG_RELEASE, ARG_NIC, ARG_NUMVFS, ARG_REPROGRAM, ARG_FAILOVER, ARG_DOMAIN, ARG_UTC };
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
                { "failover", required_argument, NULL, ARG_FAILOVER },
                { "namespace", required_argument, NULL, ARG_NAMESPACE },
                { "release", no_argument, NULL, ARG_RELEASE },
                /* NIC: the option's name is the class's key. */
                { "mac", required_argument, NULL, ARG_NIC },
                { "vlan", required_argument, NULL, ARG_NIC },
                { "trust", required_argument, NULL, ARG_NIC },
                { "spoofchk", required_argument, NULL, ARG_NIC },
                { "link-state", required_argument, NULL, ARG_NIC },
                { "max-tx-rate", required_argument, NULL, ARG_NIC },
                { "min-tx-rate", required_argument, NULL, ARG_NIC },
                { "pf", required_argument, NULL, ARG_PF },
                { "domain", required_argument, NULL, ARG_DOMAIN },
                { "mode", required_argument, NULL, ARG_MODE },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "force", no_argument, NULL, ARG_FORCE },
                { "cycle", no_argument, NULL, ARG_CYCLE },
                { "policy", no_argument, NULL, ARG_POLICY },
                { "numvfs", required_argument, NULL, ARG_NUMVFS },
                { "reprogram", required_argument, NULL, ARG_REPROGRAM },
                { "output", required_argument, NULL, 'o' },
                { "no-reconnect", no_argument, NULL, ARG_NO_RECONNECT },
                { "utc", no_argument, NULL, ARG_UTC },
                { "wait", no_argument, NULL, ARG_WAIT },
                { "quiet", no_argument, NULL, 'q' },
                { "effective", no_argument, NULL, ARG_EFFECTIVE },
                { "verbose", no_argument, NULL, 'v' },
                {}
        };
        const struct command *cmd = NULL;
        bool want_help = false;
        char **args;
        int n_args = 0, o;

        /* --json first: a usage error found while parsing is then JSON too. */
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
                if (streq(argv[i], "--json"))
                        arg_json = true;

        /* Options may come anywhere; positional arguments are kept in
         * order (getopt permutes them to the end). Messages are ours:
         * getopt would call "-1" an invalid option '1'. */
        opterr = 0;
        int opt_index = 0;
        while ((o = getopt_long(argc, argv, ":ho:vq", options, &opt_index)) >= 0) {
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
                        if (errno || end == optarg || *end || optarg[0] == '-' || s > 86400 * 365)
                                return usage_error(find_command_name(argc, argv),
                                                   "--timeout takes seconds (0: never), not '%s'.", optarg);
                        arg_timeout = s * USEC_PER_SEC;
                        arg_timeout_set = true;
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
                case ARG_FAILOVER:
                        arg_failover = optarg;
                        break;
                case ARG_NAMESPACE: {
                        char *end;
                        unsigned long ns;

                        errno = 0;
                        ns = strtoul(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || ns == 0 || ns > 0xfffffffeUL)
                                return usage_error("attach", "--namespace '%s' is not a namespace ID (1 to %lu).",
                                                   optarg, 0xfffffffeUL);
                        if (!arg_class && !(arg_class = json_object_new_object()))
                                return EXIT_FAILURE;
                        json_object_object_add(arg_class, "namespace", json_object_new_int64((int64_t) ns));
                        break;
                }
                case ARG_NIC: {
                        int r = nic_option(options[opt_index].name, optarg);
                        if (r != 0)
                                return r < 0 ? EXIT_FAILURE : r;
                        break;
                }
                case ARG_PF:
                        arg_pf = optarg;
                        break;
                case ARG_DOMAIN:
                        arg_domain = optarg;
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
                case ARG_CYCLE:
                        arg_cycle = true;
                        break;
                case ARG_RELEASE:
                        arg_release = true;
                        break;
                case ARG_POLICY:
                        arg_policy = true;
                        break;
                case ARG_NUMVFS:
                        arg_numvfs = optarg;
                        break;
                case ARG_REPROGRAM:
                        arg_reprogram = optarg;
                        break;
                case 'o':
                        arg_output = optarg;
                        break;
                case 'v':
                        arg_verbose = true;
                        break;
                case 'q':
                        arg_quiet = true;
                        break;
                case ARG_NO_RECONNECT:
                        arg_no_reconnect = true;
                        break;
                case ARG_UTC:
                        arg_utc = true;
                        break;
                case ARG_WAIT:
                        arg_wait = true;
                        break;
                default:
                        return bad_option(o, argc, argv);
                }
        }
        args = argv + optind;
        n_args = argc - optind;

        if (n_args == 0) {
                if (want_help) {
                        help();
                        return 0;
                }
                return usage_error(NULL, "no command given; see 'svffctl --help'.");
        }
        /* 'help [COMMAND]', as 'svffctl [COMMAND] --help' */
        if (streq(args[0], "help")) {
                if (n_args > 2)
                        return usage_error("help", "takes at most one command.");
                if (n_args == 1) {
                        help();
                        return 0;
                }
                args++;
                n_args--;
                want_help = true;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(args[0], commands[i].name))
                        cmd = &commands[i];
        if (!cmd)
                return usage_error(NULL, "unknown command '%s'; see 'svffctl help'.", args[0]);
        if (want_help) {
                command_help(cmd);
                return 0;
        }
        if (arg_driver && !cmd->has_driver)
                return usage_error(cmd->name, "--driver only applies to init.");
        if ((arg_live || arg_config || arg_guest_address || arg_pf || arg_class || arg_failover) &&
            !cmd->has_attach_options)
                return usage_error(cmd->name, "--pf, --live, --config, --guest-address, --namespace and --failover "
                                   "only apply to attach.");
        if (arg_mode && !cmd->has_reconf_options)
                return usage_error(cmd->name, "--mode only applies to reconf and reprogram.");
        if (arg_dry_run && !cmd->has_reconf_options && !cmd->has_dry_run)
                return usage_error(cmd->name, "--dry-run only applies to the commands that change the host and "
                                   "config reload.");
        if (arg_numvfs && !streq(cmd->name, "reprogram"))
                return usage_error(cmd->name, "--numvfs only applies to reprogram (reconf takes the count as its "
                                   "argument).");
        if (arg_reprogram && !streq(cmd->name, "reconf"))
                return usage_error(cmd->name, "--reprogram only applies to reconf.");
        if (arg_cycle && !streq(cmd->name, "reconf"))
                return usage_error(cmd->name, "--cycle only applies to reconf.");
        if (arg_release && !cmd->has_release)
                return usage_error(cmd->name, "--release only applies to detach.");
        if (arg_force && !cmd->has_reconf_options && !cmd->has_force)
                return usage_error(cmd->name, "--force only applies to reconf and release.");
        if (arg_effective && !streq(cmd->name, "config"))
                return usage_error(cmd->name, "--effective only applies to config check.");
        if (arg_policy && !cmd->has_policy)
                return usage_error(cmd->name, "--policy only applies to init.");
        if (arg_output && !cmd->has_columns)
                return usage_error(cmd->name, "-o only applies to list.");
        if (arg_domain && !cmd->has_columns)
                return usage_error(cmd->name, "--domain only applies to list (attach takes the domain as its "
                                   "last argument).");
        if (arg_verbose && !cmd->has_verbose)
                return usage_error(cmd->name, "-v only applies to status.");
        if (arg_wait && !cmd->has_verbose)
                return usage_error(cmd->name, "--wait only applies to status.");
        if (arg_quiet && !cmd->has_verbose)
                return usage_error(cmd->name, "-q only applies to status.");
        if (arg_utc && !cmd->has_reconnect)
                return usage_error(cmd->name, "--utc only applies to monitor.");
        if (arg_no_reconnect && !cmd->has_reconnect)
                return usage_error(cmd->name, "--no-reconnect only applies to monitor.");
        if (arg_timeout_set && cmd->no_timeout)
                return usage_error(cmd->name, "--timeout does not apply: %s",
                                   streq(cmd->name, "monitor") ? "monitor runs until interrupted."
                                                               : "config check does not talk to svffd.");
        if (arg_output && list_columns_parse(arg_output) < 0)
                return EXIT_USAGE;
        return cmd->fn(n_args, args);
}
