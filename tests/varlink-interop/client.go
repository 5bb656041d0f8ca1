// A typed varlink client of svffd, built by tests/test-daemon-interop.sh
// against the Go bindings varlink-go-interface-generator makes from the
// description svffd serves (package iosvff, generated beside it). It calls
// every read method and two mutations (Init of PF at 4 VFs, Release of
// the VF given) and prints
// what the typed results hold as one JSON object, for the test to compare
// with svffctl --json. Decoding into the generated types is itself a
// check: a reply whose field has the wrong type fails here.
//
//	client SOCKET PF VF
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/varlink/go/varlink"

	"svfftest/iosvff"
)

func die(what string, err error) {
	fmt.Fprintf(os.Stderr, "client: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: client SOCKET PF VF")
		os.Exit(2)
	}
	sock, pf, vf := os.Args[1], os.Args[2], os.Args[3]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := varlink.NewConnection(ctx, "unix:"+sock)
	if err != nil {
		die("connect", err)
	}
	defer c.Close()
	out := map[string]interface{}{}

	var vendor, product, version, url string
	var interfaces []string
	if err := c.GetInfo(ctx, &vendor, &product, &version, &url, &interfaces); err != nil {
		die("GetInfo", err)
	}
	out["info"] = map[string]interface{}{"vendor": vendor, "product": product, "version": version,
		"url": url, "interfaces": interfaces}

	desc, err := c.GetInterfaceDescription(ctx, "io.svff")
	if err != nil {
		die("GetInterfaceDescription", err)
	}
	out["description_bytes"] = len(desc)

	if err := iosvff.Ping().Call(ctx, c); err != nil {
		die("Ping", err)
	}

	pfs, absent, err := iosvff.List().Call(ctx, c, nil)
	if err != nil {
		die("List", err)
	}
	out["list"] = map[string]interface{}{"pfs": pfs, "absent": absent}

	one, _, err := iosvff.List().Call(ctx, c, &pf)
	if err != nil {
		die("List(pf)", err)
	}
	out["list_pf"] = one

	// An error comes back typed.
	nope := "0000:09:00.0"
	if _, _, err := iosvff.List().Call(ctx, c, &nope); err == nil {
		die("List(absent pf)", fmt.Errorf("no error"))
	} else if e, ok := err.(*iosvff.NoSuchDevice); !ok || e.Device != nope {
		die("List(absent pf)", fmt.Errorf("not a NoSuchDevice for %s: %#v", nope, err))
	}

	ver, _, root, store, ops, drift, owners, cfgErr, _, stuck, _, _, _, _, discErr, recovered, err := iosvff.Status().Call(ctx, c)
	if err != nil {
		die("Status", err)
	}
	out["status"] = map[string]interface{}{"version": ver, "sysfs_root": root,
		"store": map[string]interface{}{"path": store.Path}, "operations": ops, "drift": drift, "owners": owners,
		"config_error": cfgErr, "stuck_writes": stuck, "discovery_error": discErr,
		"recovered": recovered}

	// Monitor on its own connection: it streams until the hang-up.
	mc, err := varlink.NewConnection(ctx, "unix:"+sock)
	if err != nil {
		die("connect (Monitor)", err)
	}
	receive, err := iosvff.Monitor().Send(ctx, mc, varlink.More)
	if err != nil {
		die("Monitor", err)
	}
	ev, flags, err := receive(ctx)
	if err != nil {
		die("Monitor", err)
	}
	if flags&varlink.Continues == 0 {
		die("Monitor", fmt.Errorf("its first reply does not continue"))
	}
	out["monitor_first"] = ev.Event

	// Init again at the count it has: its reply's VFs, typed.
	four := int64(4)
	// The reply's pf, numvfs, driver, vfs, policy, then the dry run's
	// dry_run, executable, plan and class_plan, then event.
	_, numvfs, _, initVfs, _, _, _, _, _, _, err := iosvff.Init().Call(ctx, c, pf, &four, nil, nil, nil)
	if err != nil {
		die("Init", err)
	}
	out["init"] = map[string]interface{}{"numvfs": numvfs, "vfs": initVfs}

	// The reply's vf, driver, reprobed, detached_from, then the dry
	// run's dry_run, executable and plan.
	gotVf, driver, reprobed, _, _, _, _, err := iosvff.Release().Call(ctx, c, vf, nil, nil)
	if err != nil {
		die("Release", err)
	}
	out["release"] = map[string]interface{}{"vf": gotVf, "driver": driver, "reprobed": reprobed}

	// The event the release caused, typed.
	for {
		ev, _, err := receive(ctx)
		if err != nil {
			die("Monitor after Release", err)
		}
		if ev.Event == "vf-released" && ev.Device != nil && *ev.Device == vf {
			out["monitor_release"] = ev
			break
		}
	}
	mc.Close()

	after, _, err := iosvff.List().Call(ctx, c, &pf)
	if err != nil {
		die("List after Release", err)
	}
	out["list_after"] = after

	b, err := json.Marshal(out)
	if err != nil {
		die("encode", err)
	}
	fmt.Println(string(b))
}
