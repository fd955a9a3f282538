package exports

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
)

const sample = `# rdma-nfsd exports
/srv/data   10.0.0.0/24(rw,no_root_squash) 10.0.0.7(ro) *(ro,all_squash,anonuid=1000,anongid=100)

"/srv/with space"  -rw,insecure  192.0.2.0/255.255.255.0 \
        2001:db8::/32(ro,sync,no_subtree_check,fsid=7)
/srv/tab\040name	*(rw,fsid=root,sec=sys,wdelay)   # trailing comment
/srv/data/sub 10.0.0.9
`

func TestParseSample(t *testing.T) {
	tab, err := Parse("exports", []byte(sample))
	require.NoError(t, err)
	require.Len(t, tab.Exports, 4)

	data := tab.Exports[0]
	require.Equal(t, "/srv/data", data.Path)
	require.Equal(t, 2, data.Line)
	require.Len(t, data.Rules, 3)
	require.Equal(t, Options{Squash: creds.NoRootSquash, AnonUID: 65534, AnonGID: 65534}, data.Rules[0].Options)
	require.Equal(t, "10.0.0.0/24", data.Rules[0].String())
	require.Equal(t, Options{ReadOnly: true, Squash: creds.RootSquash, AnonUID: 65534, AnonGID: 65534}, data.Rules[1].Options)
	require.Equal(t, Options{ReadOnly: true, Squash: creds.AllSquash, AnonUID: 1000, AnonGID: 100}, data.Rules[2].Options)

	space := tab.Exports[1]
	require.Equal(t, "/srv/with space", space.Path)
	require.Equal(t, 4, space.Line, "a continued line has its first line's number")
	require.Equal(t, "192.0.2.0/24", space.Rules[0].String())
	require.Equal(t, Options{Insecure: true, Squash: creds.RootSquash, AnonUID: 65534, AnonGID: 65534}, space.Rules[0].Options, "the line's -defaults")
	require.Equal(t, Options{ReadOnly: true, Insecure: true, Squash: creds.RootSquash, AnonUID: 65534, AnonGID: 65534}, space.Rules[1].Options)
	require.Equal(t, "7", space.FSID)

	tab2 := tab.Exports[2]
	require.Equal(t, "/srv/tab name", tab2.Path)
	require.Equal(t, "root", tab2.FSID)
	require.True(t, tab2.Rules[0].Any)

	require.Equal(t, defaults, tab.Exports[3].Rules[0].Options, "a client without options gets the defaults")
}

// TestRuleRanking: the rule naming the address, then the first network,
// then "*", whatever their order; IPv4-mapped IPv6 addresses are IPv4.
func TestRuleRanking(t *testing.T) {
	tab, err := Parse("x", []byte("/e *(rw) 10.0.0.0/8(ro) 10.1.0.0/16(rw,all_squash) 10.1.2.3(no_root_squash)\n"))
	require.NoError(t, err)
	e := &tab.Exports[0]
	for _, c := range []struct {
		addr, want string
	}{
		{"10.1.2.3", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"10.1.9.9", "10.0.0.0/8"},
		{"10.200.0.1", "10.0.0.0/8"},
		{"192.0.2.1", "*"},
		{"2001:db8::1", "*"},
	} {
		r, ok := e.Rule(netip.MustParseAddr(c.addr))
		require.True(t, ok, c.addr)
		require.Equal(t, c.want, r.String(), c.addr)
	}
	tab, err = Parse("x", []byte("/e 10.0.0.0/8(rw)\n"))
	require.NoError(t, err)
	_, ok := tab.Exports[0].Rule(netip.MustParseAddr("192.0.2.1"))
	require.False(t, ok, "no rule admits a client outside every network")
}

// TestFind: an export's own path and its subdirectories find it, the
// nearest export winning; other paths find nothing.
func TestFind(t *testing.T) {
	tab, err := Parse("x", []byte("/srv *(ro)\n/srv/data *(rw)\n/other/ *(ro)\n"))
	require.NoError(t, err)
	for dir, want := range map[string]string{
		"/srv": "/srv", "/srv/": "/srv", "/srv/x/y": "/srv", "/srv/data": "/srv/data",
		"/srv/data/a": "/srv/data", "/srv/database": "/srv", "/other": "/other", "/srv/data/../x": "/srv",
	} {
		e, ok := tab.Find(dir)
		require.True(t, ok, dir)
		require.Equal(t, want, e.Path, dir)
	}
	for _, dir := range []string{"/", "/sr", "/otherwise", "/does/not/exist"} {
		_, ok := tab.Find(dir)
		require.False(t, ok, dir)
	}
	root, err := Parse("x", []byte("/ *(ro)\n"))
	require.NoError(t, err)
	e, ok := root.Find("/any/thing")
	require.True(t, ok)
	require.Equal(t, "/", e.Path)
}

// TestRefused: what is not supported, or wrong, is refused with its line
// number and a message naming what.
func TestRefused(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"relative *(rw)", "not an absolute path"},
		{"/a/../b *(rw)", `".."`},
		{"/a", "names no client"},
		{"/a host.example(rw)", "host names"},
		{"/a *.example.com(rw)", "host names"},
		{"/a @netgroup(rw)", "netgroups"},
		{"/a (rw)", "names no client"},
		{"/a *(rw", `do not end with ")"`},
		{"/a *(async)", `option "async" is not supported`},
		{"/a *(subtree_check)", `"subtree_check" is not supported`},
		{"/a *(crossmnt)", `"crossmnt" is not supported`},
		{"/a *(sec=krb5)", `"sec=krb5" is not supported`},
		{"/a *(rw,,ro)", "an empty option"},
		{"/a *(anonuid=-1)", "anonuid"},
		{"/a *(anongid=4294967295)", "anongid"},
		{"/a *(anonuid=x)", "anonuid"},
		{"/a *(fsid=1) 10.0.0.1(fsid=2)", "fsid 1 already"},
		{"/a *(fsid=nope)", "neither a number"},
		{"/a 10.0.0.1/33(rw)", "out of range"},
		{"/a 10.0.0.1/24(rw)", "host bits set"},
		{"/a 10.0.0.0/255.0.255.0(rw)", "not contiguous"},
		{"/a 10.0.0.0/nope(rw)", "neither a prefix length"},
		{"/a fe80::1%eth0(rw)", "not an IP address"},
		{"/a *(rw) *(ro)", "named twice"},
		{"/a \"*(rw)", "quote is not closed"},
		{"/a *(rw)\n/a/ 10.0.0.1", "exported on line 2 already"},
	} {
		_, err := Parse("exports", []byte("# first line\n"+c.text+"\n"))
		var pe *Error
		require.True(t, errors.As(err, &pe), "%q: %v", c.text, err)
		require.Contains(t, err.Error(), c.want, c.text)
		wantLine := 2
		if strings.Contains(c.text, "\n") {
			wantLine = 3
		}
		require.Equal(t, wantLine, pe.Line, "%q: %v", c.text, err)
		require.True(t, strings.HasPrefix(err.Error(), "exports:"), err.Error())
	}
}

// TestNetmaskAndIPv6: an IPv4 netmask is a prefix length; IPv6 networks
// work; an empty file is an empty table.
func TestNetmaskAndIPv6(t *testing.T) {
	tab, err := Parse("x", []byte("/a 10.0.0.0/255.255.0.0(rw) 2001:db8:1::/48(ro)\n"))
	require.NoError(t, err)
	require.Equal(t, "10.0.0.0/16", tab.Exports[0].Rules[0].String())
	r, ok := tab.Exports[0].Rule(netip.MustParseAddr("2001:db8:1::5"))
	require.True(t, ok)
	require.True(t, r.ReadOnly)
	empty, err := Parse("x", []byte("# nothing\n\n"))
	require.NoError(t, err)
	require.Empty(t, empty.Exports)
}

// FuzzParse: any input parses or fails with an *Error, and a parsed
// table's exports are absolute and clean with at least one rule each.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("/a *(rw)\n"))
	f.Add([]byte("/a \\\n 10.0.0.0/8(ro,anonuid=5)\n"))
	f.Add([]byte("\"/a b\" -rw 2001:db8::/32 *(fsid=0)"))
	f.Fuzz(func(t *testing.T, text []byte) {
		tab, err := Parse("f", text)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		for _, e := range tab.Exports {
			if !strings.HasPrefix(e.Path, "/") || len(e.Rules) == 0 {
				t.Fatalf("export %+v", e)
			}
			for i := range e.Rules {
				r := &e.Rules[i]
				if !r.Any && !r.Net.IsValid() {
					t.Fatalf("rule %+v of %s", r, e.Path)
				}
			}
		}
	})
}
