package mountstats

import (
	"strings"
	"testing"
)

// sample is the shape of /proc/self/mountstats in the Debian 6.1 guest: an
// RDMA mount among others (the numbers are made up, one per position).
const sample = `device proc mounted on /proc with fstype proc
device 10.0.0.1:/ mounted on /mnt/other with fstype nfs statvers=1.1
	opts:	rw,vers=3
	xprt:	rdma 0 0 1 0 9 99 99 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7 0 0
device 10.0.0.1:/ mounted on /mnt/x with fstype nfs statvers=1.1
	opts:	rw,vers=3,rsize=1048576,wsize=1048576,proto=rdma,port=20051
	age:	12
	xprt:	rdma 0 0 2 1 3 40 41 0 40 0 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21
	per-op statistics
	        NULL: 1 1 0 44 24 0 0 0 0
`

func TestParseXprt(t *testing.T) {
	x, err := ParseXprt(sample, "/mnt/x")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"connect_count": 2, "sends": 40, "recvs": 41, "read_chunk_count": 5,
		"write_chunk_count": 6, "reply_chunk_count": 7, "local_inv_needed": 19, "reply_waits_for_send": 21}
	for k, v := range want {
		if x[k] != v {
			t.Errorf("%s = %d, want %d", k, x[k], v)
		}
	}
	if len(x) != 27 {
		t.Errorf("%d fields, want 27", len(x))
	}
	before := Xprt{"sends": 30, "read_chunk_count": 5, "local_inv_needed": 20}
	d := x.Sub(before)
	if d["sends"] != 10 || d["read_chunk_count"] != 0 || d["local_inv_needed"] != 0 || d["recvs"] != 41 {
		t.Errorf("Sub: %v", d)
	}
	if s := x.String(); !strings.HasPrefix(s, "bind_count=0 connect_count=2 ") || !strings.HasSuffix(s, " reply_waits_for_send=21") {
		t.Errorf("String: %q", s)
	}
}

func TestParseXprtErrors(t *testing.T) {
	for _, c := range []struct{ text, mnt, want string }{
		{sample, "/mnt/y", "no mount on /mnt/y"},
		{"device proc mounted on /proc with fstype proc\n", "/proc", "no xprt: rdma line"},
		{"device a mounted on /m with fstype nfs\n\txprt:\trdma 0 1 2\n", "/m", "3 numbers"},
		{"device a mounted on /m with fstype nfs\n\txprt:\trdma" + strings.Repeat(" x", 27) + "\n", "/m", "field srcport"},
	} {
		_, err := ParseXprt(c.text, c.mnt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseXprt(%q): %v, want an error containing %q", c.mnt, err, c.want)
		}
	}
}

// opsSample is a mount's per-op section (Linux 6.1: nine numbers a line,
// the ninth the errors, which ParseOps does not keep).
const opsSample = `device 10.0.0.1:/ mounted on /mnt/a with fstype nfs statvers=1.1
	opts:	rw,vers=3
	xprt:	rdma 0 0 1 0 9 99 99 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7 0 0
	per-op statistics
	        NULL: 1 1 0 44 24 0 0 0 0
	     GETATTR: 10 11 1 1400 1120 3 4 5 0
	 READDIRPLUS: 7 7 0 900 99000 1 20 22 0

device 10.0.0.1:/export mounted on /mnt/b with fstype nfs statvers=1.1
	per-op statistics
	     GETATTR: 99 99 0 1 1 1 1 1 0
`

func TestParseOps(t *testing.T) {
	o, err := ParseOps(opsSample, "/mnt/a")
	if err != nil {
		t.Fatal(err)
	}
	if g := o["GETATTR"]; g != (Op{10, 11, 1, 1400, 1120, 3, 4, 5}) {
		t.Errorf("GETATTR: %+v", g)
	}
	if o["READDIRPLUS"].Ops != 7 || len(o) != 3 {
		t.Errorf("ops: %v", o)
	}
	before := Ops{"GETATTR": {Ops: 4, ExecuteMs: 9}}
	d := o.Sub(before)
	if d["GETATTR"].Ops != 6 || d["GETATTR"].ExecuteMs != 0 || d["NULL"].Ops != 1 {
		t.Errorf("Sub: %v", d)
	}
	d.Add(d)
	if d["GETATTR"].Ops != 12 {
		t.Errorf("Add: %v", d)
	}
	if s := o.String(); s != "GETATTR=10 NULL=1 READDIRPLUS=7" {
		t.Errorf("String: %q", s)
	}
	if s := o.Format(func(op Op) uint64 { return op.ExecuteMs }); s != "GETATTR=5 NULL=0 READDIRPLUS=22" {
		t.Errorf("Format (execute ms): %q", s)
	}
	if b, err := ParseOps(opsSample, "/mnt/b"); err != nil || b["GETATTR"].Ops != 99 {
		t.Errorf("the second mount: %v, %v", b, err)
	}
	if _, err := ParseOps(opsSample, "/mnt/c"); err == nil {
		t.Error("no error for a mount that is not there")
	}
	if _, err := ParseOps(sample, "/mnt/other"); err == nil {
		t.Error("no error for a mount without per-op statistics")
	}
}

func TestFormatMean(t *testing.T) {
	o := Ops{"LOOKUP": {Ops: 4, RTTMs: 5}, "GETATTR": {Ops: 3, RTTMs: 1}, "NULL": {}}
	if s := o.FormatMean(func(op Op) float64 { return float64(op.RTTMs) / float64(op.Ops) }); s != "GETATTR=0.33 LOOKUP=1.25" {
		t.Errorf("FormatMean: %q", s)
	}
}
