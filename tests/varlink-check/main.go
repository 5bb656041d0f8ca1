// varlink-check: a validating varlink proxy for svff's integration tests.
//
// It listens on a socket, relays every connection byte for byte to
// svffd's socket, and checks each reply and error svffd sends against the
// interface descriptions svffd itself serves (GetInterfaceDescription),
// parsed by the varlink IDL parser of the Go varlink implementation:
// declared fields only, required fields present, types right (enums,
// arrays, maps, nested structs), null only where '?' allows, progress
// replies (continues: true) only to calls with more, errors against their
// declared parameters, org.varlink.service's errors included. The calls
// are checked against the methods' input too.
//
// Every violation is logged on stderr and appended to the violations file;
// the test harness fails the test when that file is not empty.
//
// Relaying bytes rather than messages keeps the proxy out of the way: a
// partial message, an oversized one or a hang-up reaches svffd as sent.
//
//	varlink-check -upstream SVFFD.sock -listen PROXY.sock -violations FILE
//	varlink-check -upstream SVFFD.sock -describe IFACE  (the text, on stdout)
//	varlink-check -upstream SVFFD.sock -lint  (every member documented?)
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/varlink/go/varlink/idl"
)

var (
	upstream   = flag.String("upstream", "", "svffd's socket")
	listen     = flag.String("listen", "", "the socket to serve")
	violations = flag.String("violations", "", "file the violations are appended to")
	describe   = flag.String("describe", "", "print this interface's served description and exit")
	lint       = flag.Bool("lint", false, "check that every served interface and member has a doc comment, and exit")
)

// A parsed interface and its named types.
type iface struct {
	idl     *idl.IDL
	aliases map[string]*idl.Type
	methods map[string]*idl.Method
	errors  map[string]*idl.Error
}

var (
	ifaces   = map[string]*iface{}
	logMu    sync.Mutex
	logFile  *os.File
	nViolate int
)

func violation(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	logMu.Lock()
	defer logMu.Unlock()
	nViolate++
	fmt.Fprintf(os.Stderr, "varlink-check: VIOLATION: %s\n", msg)
	if logFile != nil {
		fmt.Fprintf(logFile, "%s\n", msg)
	}
}

// call sends one call on a fresh connection and returns the reply.
func call(method string, params interface{}) (map[string]json.RawMessage, error) {
	c, err := net.DialTimeout("unix", *upstream, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg, _ := json.Marshal(map[string]interface{}{"method": method, "parameters": params})
	if _, err := c.Write(append(msg, 0)); err != nil {
		return nil, err
	}
	var buf []byte
	tmp := make([]byte, 65536)
	for bytes.IndexByte(buf, 0) < 0 {
		n, err := c.Read(tmp)
		if err != nil {
			return nil, err
		}
		buf = append(buf, tmp[:n]...)
	}
	var reply map[string]json.RawMessage
	if err := json.Unmarshal(buf[:bytes.IndexByte(buf, 0)], &reply); err != nil {
		return nil, err
	}
	if e, ok := reply["error"]; ok {
		return nil, fmt.Errorf("%s: %s", method, string(e))
	}
	return reply, nil
}

func fetchDescription(name string) (string, error) {
	reply, err := call("org.varlink.service.GetInterfaceDescription", map[string]string{"interface": name})
	if err != nil {
		return "", err
	}
	var p struct{ Description *string }
	if err := json.Unmarshal(reply["parameters"], &p); err != nil || p.Description == nil {
		return "", fmt.Errorf("GetInterfaceDescription(%s): no description", name)
	}
	return *p.Description, nil
}

// loadInterfaces parses every interface GetInfo lists.
func loadInterfaces() error {
	reply, err := call("org.varlink.service.GetInfo", map[string]string{})
	if err != nil {
		return err
	}
	var info struct{ Interfaces []string }
	if err := json.Unmarshal(reply["parameters"], &info); err != nil {
		return err
	}
	for _, name := range info.Interfaces {
		text, err := fetchDescription(name)
		if err != nil {
			return err
		}
		parsed, err := idl.New(text)
		if err != nil {
			return fmt.Errorf("the description of %s does not parse: %v", name, err)
		}
		if parsed.Name != name {
			return fmt.Errorf("GetInterfaceDescription(%s) describes %s", name, parsed.Name)
		}
		f := &iface{idl: parsed, aliases: map[string]*idl.Type{},
			methods: map[string]*idl.Method{}, errors: map[string]*idl.Error{}}
		for _, a := range parsed.Aliases {
			f.aliases[a.Name] = a.Type
		}
		for _, m := range parsed.Methods {
			f.methods[m.Name] = m
		}
		for _, e := range parsed.Errors {
			f.errors[e.Name] = e
		}
		ifaces[name] = f
	}
	if _, ok := ifaces["org.varlink.service"]; !ok {
		return errors.New("GetInfo does not list org.varlink.service")
	}
	return nil
}

// undocumented lists, on stdout, each interface and member without a doc
// comment; returns how many.
func undocumented() int {
	n := 0
	names := make([]string, 0, len(ifaces))
	for name := range ifaces {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := ifaces[name]
		if strings.TrimSpace(f.idl.Doc) == "" {
			fmt.Printf("interface %s\n", name)
			n++
		}
		for _, m := range f.idl.Members {
			var kind, member, doc string
			switch x := m.(type) {
			case *idl.Alias:
				kind, member, doc = "type", x.Name, x.Doc
			case *idl.Method:
				kind, member, doc = "method", x.Name, x.Doc
			case *idl.Error:
				kind, member, doc = "error", x.Name, x.Doc
			}
			if strings.TrimSpace(doc) == "" {
				fmt.Printf("%s %s.%s\n", kind, name, member)
				n++
			}
		}
	}
	return n
}

// ---- type checking ----

var intRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func kindName(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []interface{}:
		return "array"
	case map[string]interface{}:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// check returns the ways v is not of type t; path names v in messages.
func check(f *iface, t *idl.Type, v interface{}, path string) []string {
	if t.Kind == idl.TypeMaybe {
		if v == nil {
			return nil
		}
		return check(f, t.ElementType, v, path)
	}
	if v == nil {
		return []string{path + ": null where the type is not optional"}
	}
	bad := func(want string) []string {
		return []string{fmt.Sprintf("%s: %s where %s is declared", path, kindName(v), want)}
	}
	switch t.Kind {
	case idl.TypeBool:
		if _, ok := v.(bool); !ok {
			return bad("bool")
		}
	case idl.TypeInt:
		n, ok := v.(json.Number)
		if !ok {
			return bad("int")
		}
		if !intRe.MatchString(n.String()) {
			return []string{fmt.Sprintf("%s: %s is not an int", path, n)}
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			return []string{fmt.Sprintf("%s: %s does not fit 64 bits", path, n)}
		}
	case idl.TypeFloat:
		if _, ok := v.(json.Number); !ok {
			return bad("float")
		}
	case idl.TypeString:
		if _, ok := v.(string); !ok {
			return bad("string")
		}
	case idl.TypeObject:
		// varlink's "object" is any JSON value but null.
	case idl.TypeArray:
		a, ok := v.([]interface{})
		if !ok {
			return bad("array")
		}
		var out []string
		for i, e := range a {
			out = append(out, check(f, t.ElementType, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case idl.TypeMap:
		o, ok := v.(map[string]interface{})
		if !ok {
			return bad("map")
		}
		var out []string
		for _, k := range sortedKeys(o) {
			out = append(out, check(f, t.ElementType, o[k], fmt.Sprintf("%s[%q]", path, k))...)
		}
		return out
	case idl.TypeEnum:
		s, ok := v.(string)
		if !ok {
			return bad("enum")
		}
		for _, fl := range t.Fields {
			if fl.Name == s {
				return nil
			}
		}
		names := []string{}
		for _, fl := range t.Fields {
			names = append(names, fl.Name)
		}
		return []string{fmt.Sprintf("%s: %q is not one of the enum's values (%s)", path, s, strings.Join(names, ", "))}
	case idl.TypeStruct:
		o, ok := v.(map[string]interface{})
		if !ok {
			return bad("object")
		}
		return checkFields(f, t, o, path)
	case idl.TypeAlias:
		at, ok := f.aliases[t.Alias]
		if !ok {
			return []string{fmt.Sprintf("%s: type %s is not declared", path, t.Alias)}
		}
		return check(f, at, v, path+"<"+t.Alias+">")
	default:
		return []string{fmt.Sprintf("%s: unknown type kind %d", path, t.Kind)}
	}
	return nil
}

func checkFields(f *iface, t *idl.Type, o map[string]interface{}, path string) []string {
	var out []string
	declared := map[string]bool{}
	for _, fl := range t.Fields {
		declared[fl.Name] = true
		v, present := o[fl.Name]
		if !present {
			if fl.Type.Kind != idl.TypeMaybe {
				out = append(out, fmt.Sprintf("%s.%s: required field missing", path, fl.Name))
			}
			continue
		}
		out = append(out, check(f, fl.Type, v, path+"."+fl.Name)...)
	}
	for _, k := range sortedKeys(o) {
		if !declared[k] {
			out = append(out, fmt.Sprintf("%s.%s: field not declared", path, k))
		}
	}
	return out
}

func sortedKeys(o map[string]interface{}) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func decode(msg []byte) (map[string]interface{}, error) {
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	o, ok := v.(map[string]interface{})
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

func splitName(q string) (string, string) {
	i := strings.LastIndexByte(q, '.')
	if i < 0 {
		return "", q
	}
	return q[:i], q[i+1:]
}

// A call awaiting its replies.
type pending struct {
	method string
	more   bool
}

// vendor extensions are nested in an object named in reverse-domain
// notation (the varlink method-call spec).
var vendorRe = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$`)

// checkCall validates a call against its method's input; returns the
// call to expect replies for, nil for oneway or unparsable calls.
func checkCall(msg []byte) *pending {
	o, err := decode(msg)
	if err != nil {
		return &pending{method: ""}
	}
	method, _ := o["method"].(string)
	more, _ := o["more"].(bool)
	oneway, _ := o["oneway"].(bool)
	if oneway {
		return nil
	}
	p := &pending{method: method, more: more}
	ifname, member := splitName(method)
	f := ifaces[ifname]
	if f == nil {
		return p
	}
	m := f.methods[member]
	if m == nil {
		return p
	}
	params, _ := o["parameters"].(map[string]interface{})
	if params == nil {
		params = map[string]interface{}{}
	}
	for _, v := range checkFields(f, m.In, params, method+" call") {
		// A test may send a wrong call on purpose; it is reported, not
		// counted, as svffd's answer is what the interface binds.
		fmt.Fprintf(os.Stderr, "varlink-check: note: %s\n", v)
	}
	return p
}

// report logs one reply's violations, the first few of a long list.
func report(method, what string, vs []string) {
	const max = 8
	for i, v := range vs {
		if i == max {
			violation("reply to %s%s: ... and %d more", method, what, len(vs)-max)
			break
		}
		violation("reply to %s%s: %s", method, what, v)
	}
}

// checkReply validates one reply to c; returns whether the call is done.
func checkReply(c *pending, msg []byte) bool {
	o, err := decode(msg)
	if err != nil {
		violation("reply to %s is not a JSON object: %v", c.method, err)
		return true
	}
	for _, k := range sortedKeys(o) {
		switch k {
		case "parameters", "continues", "error":
		default:
			if !vendorRe.MatchString(k) {
				violation("reply to %s: unknown key %q", c.method, k)
			}
		}
	}
	continues := false
	if v, ok := o["continues"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			violation("reply to %s: continues is %s", c.method, kindName(v))
		}
		continues = b
	}
	var params map[string]interface{}
	if v, ok := o["parameters"]; ok && v != nil {
		p, isObj := v.(map[string]interface{})
		if !isObj {
			violation("reply to %s: parameters is %s, not an object", c.method, kindName(v))
			return !continues
		}
		params = p
	} else {
		params = map[string]interface{}{}
	}
	if e, ok := o["error"]; ok {
		name, isStr := e.(string)
		if !isStr {
			violation("reply to %s: error is %s", c.method, kindName(e))
			return true
		}
		if continues {
			violation("reply to %s: error %s with continues", c.method, name)
		}
		ifname, member := splitName(name)
		f := ifaces[ifname]
		if f == nil || f.errors[member] == nil {
			violation("reply to %s: error %s is not declared", c.method, name)
			return true
		}
		report(c.method, "", checkFields(f, f.errors[member].Type, params, name))
		return true
	}
	if continues && !c.more {
		violation("reply to %s: continues without more in the call", c.method)
	}
	ifname, member := splitName(c.method)
	f := ifaces[ifname]
	if f == nil || f.methods[member] == nil {
		violation("reply to %s: a reply to an undeclared method (expected an error)", c.method)
		return !continues
	}
	what := ""
	if continues {
		what = " (continues)"
	}
	report(c.method, what, checkFields(f, f.methods[member].Out, params, c.method+" reply"))
	return !continues
}

// ---- relaying ----

type queue struct {
	mu    sync.Mutex
	calls []*pending
}

func (q *queue) push(p *pending) {
	q.mu.Lock()
	q.calls = append(q.calls, p)
	q.mu.Unlock()
}

func (q *queue) head() *pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.calls) == 0 {
		return nil
	}
	return q.calls[0]
}

func (q *queue) pop() {
	q.mu.Lock()
	q.calls = q.calls[1:]
	q.mu.Unlock()
}

// relay copies src to dst as it comes, and hands each NUL-terminated
// message to onMsg. It closes dst's write side at src's end.
func relay(dst, src *net.UnixConn, onMsg func([]byte)) {
	buf := make([]byte, 1<<16)
	var partial []byte
	const maxPartial = 64 << 20
	for {
		n, err := src.Read(buf)
		if n > 0 {
			// The message is seen before it is sent on, so a reply is
			// never checked before its call is queued.
			data := buf[:n]
			for {
				i := bytes.IndexByte(data, 0)
				if i < 0 {
					if len(partial)+len(data) <= maxPartial {
						partial = append(partial, data...)
					}
					break
				}
				partial = append(partial, data[:i]...)
				onMsg(partial)
				partial = nil
				data = data[i+1:]
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.CloseWrite()
}

func serve(client *net.UnixConn) {
	defer client.Close()
	up, err := net.Dial("unix", *upstream)
	if err != nil {
		// svffd is gone: the client sees a hang-up, as it would.
		return
	}
	upc := up.(*net.UnixConn)
	defer upc.Close()
	q := &queue{}
	done := make(chan struct{})
	go func() {
		relay(upc, client, func(msg []byte) {
			if p := checkCall(msg); p != nil {
				q.push(p)
			}
		})
		close(done)
	}()
	relay(client, upc, func(msg []byte) {
		c := q.head()
		if c == nil {
			violation("a reply without a call: %.200s", msg)
			return
		}
		if checkReply(c, msg) {
			q.pop()
		}
	})
	_ = client.Close()
	_ = upc.Close()
	<-done
}

func main() {
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "varlink-check: -upstream is required")
		os.Exit(2)
	}
	if *describe != "" {
		text, err := fetchDescription(*describe)
		if err != nil {
			fmt.Fprintf(os.Stderr, "varlink-check: %v\n", err)
			os.Exit(1)
		}
		fmt.Print(text)
		return
	}
	if *lint {
		if err := loadInterfaces(); err != nil {
			fmt.Fprintf(os.Stderr, "varlink-check: %v\n", err)
			os.Exit(1)
		}
		if n := undocumented(); n > 0 {
			fmt.Fprintf(os.Stderr, "varlink-check: %d members without a doc comment\n", n)
			os.Exit(1)
		}
		return
	}
	if *listen == "" || *violations == "" {
		fmt.Fprintln(os.Stderr, "varlink-check: -listen and -violations are required")
		os.Exit(2)
	}
	var err error
	logFile, err = os.OpenFile(*violations, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "varlink-check: %v\n", err)
		os.Exit(2)
	}
	if err := loadInterfaces(); err != nil {
		violation("cannot load the interfaces svffd serves: %v", err)
		os.Exit(1)
	}
	_ = os.Remove(*listen)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: *listen, Net: "unix"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "varlink-check: %v\n", err)
		os.Exit(2)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		l.Close()
	}()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				break
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go serve(c)
	}
	logMu.Lock()
	n := nViolate
	logMu.Unlock()
	if n > 0 {
		os.Exit(1)
	}
}
