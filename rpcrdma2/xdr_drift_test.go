package rpcrdma2

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// testdata/rpcrdma-v2.x is the XDR of draft-cel-nfsv4-rpcrdma-version-two-09,
// its code component license included, extracted as the draft's §6.2 says:
//
//	sed -n -e 's:^ */// ::p' -e 's:^ *///$::p' < draft.txt > rpcrdma-v2.x
//
// The tests below parse it and hold this package to it: every constant, the
// field order of every structure and the arms of the error union. The
// draft's XDR has three slips that its parser here takes as meant: the
// struct rpcrdma2_hdr_prefix has no "{", "typedef rpcrdma2_propid uint32"
// names its types the wrong way round, and two forms of const ("const NAME
// VALUE", "const TYPE NAME = VALUE") are not RFC 4506's.

// xdrField is one field of a structure, or one arm of a union.
type xdrField struct {
	typ, name  string
	ptr, array bool // "*name" (optional-data), "name<>"
	cases      []string
}

// xdrSpec is what the parser reads from the XDR file.
type xdrSpec struct {
	consts  map[string]uint32
	structs map[string][]xdrField
	unions  map[string][]xdrField // the discriminant first
	order   []string              // structures and unions, in file order
}

// parseXDR reads the XDR subset the draft uses.
func parseXDR(t *testing.T, path string) *xdrSpec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(b), " ")
	toks := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|0x[0-9a-fA-F]+|[0-9]+|<>|[{}();:*=,]`).FindAllString(text, -1)
	sp := &xdrSpec{consts: map[string]uint32{}, structs: map[string][]xdrField{}, unions: map[string][]xdrField{}}
	i := 0
	next := func() string {
		if i >= len(toks) {
			t.Fatalf("%s: unexpected end", path)
		}
		i++
		return toks[i-1]
	}
	peek := func() string {
		if i < len(toks) {
			return toks[i]
		}
		return ""
	}
	num := func(s string) uint32 {
		v, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			t.Fatalf("%s: %q is not a number", path, s)
		}
		return uint32(v)
	}
	// field reads "[struct] type [*]name[<>] ;".
	field := func() xdrField {
		var f xdrField
		if peek() == "struct" {
			next()
		}
		f.typ = next()
		if peek() == "*" {
			next()
			f.ptr = true
		}
		f.name = next()
		if peek() == "<>" {
			next()
			f.array = true
		}
		if s := next(); s != ";" {
			t.Fatalf("%s: field %s %s ends with %q", path, f.typ, f.name, s)
		}
		return f
	}
	for i < len(toks) {
		switch kw := next(); kw {
		case "const":
			// const NAME VALUE; const NAME = VALUE; const TYPE NAME = VALUE;
			a, b := next(), next()
			var name, val string
			switch {
			case b == "=":
				name, val = a, next()
			case peek() == "=":
				next()
				name, val = b, next()
			default:
				name, val = a, b
			}
			sp.consts[name] = num(val)
			next() // ;
		case "typedef":
			for next() != ";" {
			}
		case "enum":
			next() // name
			next() // {
			for {
				name := next()
				next() // =
				sp.consts[name] = num(next())
				if next() == "}" {
					break
				}
			}
			next() // ;
		case "struct":
			name := next()
			if peek() == "{" {
				next()
			} // else the draft's slip: struct rpcrdma2_hdr_prefix has no "{"
			var fs []xdrField
			for peek() != "}" {
				fs = append(fs, field())
			}
			next() // }
			next() // ;
			sp.structs[name] = fs
			sp.order = append(sp.order, name)
		case "union":
			name := next()
			next() // switch
			next() // (
			disc := xdrField{typ: next(), name: next()}
			next() // )
			next() // {
			fs := []xdrField{disc}
			var cases []string
			for peek() != "}" {
				switch next() {
				case "case":
					cases = append(cases, next())
					next() // :
				case "default":
					cases = append(cases, "default")
					next() // :
				}
				if peek() == "case" || peek() == "default" {
					continue // fall-through arms
				}
				if peek() == "void" {
					next()
					next() // ;
					fs = append(fs, xdrField{typ: "void", cases: cases})
				} else {
					f := field()
					f.cases = cases
					fs = append(fs, f)
				}
				cases = nil
			}
			next() // }
			next() // ;
			sp.unions[name] = fs
			sp.order = append(sp.order, name)
		default:
			t.Fatalf("%s: unexpected %q", path, kw)
		}
	}
	return sp
}

// goConsts are this package's value of each constant of the XDR.
var goConsts = map[string]uint32{
	"RPCRDMA2_F_RESPONSE":      FlagResponse,
	"RDMA2_PROPID_RBSIZ":       uint32(PropReceiveBufferSize),
	"RDMA2_PROPID_BRS":         uint32(PropReverseRequests),
	"RDMA2_RVREQSUP_NONE":      uint32(ReverseNone),
	"RDMA2_RVREQSUP_INLINE":    uint32(ReverseInline),
	"RDMA2_RVREQSUP_GENL":      uint32(ReverseGeneral),
	"RDMA2_MSG":                uint32(HTypeMsg),
	"RDMA2_NOMSG":              uint32(HTypeNoMsg),
	"RDMA2_ERROR":              uint32(HTypeError),
	"RDMA2_CONNPROP":           uint32(HTypeConnProp),
	"RDMA2_ERR_VERS":           uint32(ErrVers),
	"RDMA2_ERR_BAD_XDR":        uint32(ErrBadXDR),
	"RDMA2_ERR_INVAL_HTYPE":    uint32(ErrInvalHType),
	"RDMA2_ERR_READ_CHUNKS":    uint32(ErrReadChunks),
	"RDMA2_ERR_WRITE_CHUNKS":   uint32(ErrWriteChunks),
	"RDMA2_ERR_SEGMENTS":       uint32(ErrSegments),
	"RDMA2_ERR_WRITE_RESOURCE": uint32(ErrWriteResource),
	"RDMA2_ERR_REPLY_RESOURCE": uint32(ErrReplyResource),
	"RDMA2_ERR_SYSTEM":         uint32(ErrSystem),
}

func TestXDRConstants(t *testing.T) {
	sp := parseXDR(t, "testdata/rpcrdma-v2.x")
	for name, v := range sp.consts {
		g, ok := goConsts[name]
		switch {
		case !ok:
			t.Errorf("the XDR's %s (%d) has no Go constant", name, v)
		case g != v:
			t.Errorf("%s: the XDR says %d, the Go constant is %d", name, v, g)
		}
	}
	for name := range goConsts {
		if _, ok := sp.consts[name]; !ok {
			t.Errorf("%s is not in the XDR", name)
		}
	}
}

// tags returns the xdr tags of t's fields in order, the tags holding
// several names split; an untagged field is named from its Go name
// ("Handle" is "rdma_handle"), an embedded struct without a tag by its own
// fields.
func tags(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag, ok := f.Tag.Lookup("xdr")
		switch {
		case ok:
			out = append(out, strings.Split(tag, ",")...)
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			out = append(out, tags(f.Type)...)
		default:
			out = append(out, "rdma_"+strings.ToLower(f.Name))
		}
	}
	return out
}

// flatten returns the field names of struct name, with a field of a
// struct type that Go embeds (inline) replaced by that struct's fields.
func flatten(sp *xdrSpec, name string, inline map[string]bool) []string {
	var out []string
	for _, f := range sp.structs[name] {
		if inline[f.typ] {
			out = append(out, flatten(sp, f.typ, inline)...)
			continue
		}
		out = append(out, f.name)
	}
	return out
}

func TestXDRStructures(t *testing.T) {
	sp := parseXDR(t, "testdata/rpcrdma-v2.x")
	inline := map[string]bool{"rpcrdma_common": true, "rpcrdma2_segment": true}
	prefix := reflect.TypeFor[Prefix]()
	header := tags(reflect.TypeFor[Header]())
	checked := map[string]bool{}
	same := func(xdrName string, xdrFields, goFields []string) {
		t.Helper()
		checked[xdrName] = true
		if !slices.Equal(xdrFields, goFields) {
			t.Errorf("%s: the XDR's fields %v, the Go code's %v", xdrName, xdrFields, goFields)
		}
	}
	// The prefix, word by word (Prefix flattens rdma_start).
	same("rpcrdma_common", flatten(sp, "rpcrdma_common", inline), tags(prefix)[:4])
	same("rpcrdma2_hdr_prefix", flatten(sp, "rpcrdma2_hdr_prefix", inline), tags(prefix))
	// The chunk structures are package chunks' types.
	same("rpcrdma2_segment", flatten(sp, "rpcrdma2_segment", inline), tags(reflect.TypeFor[chunks.Segment]()))
	same("rpcrdma2_read_segment", flatten(sp, "rpcrdma2_read_segment", inline), tags(reflect.TypeFor[chunks.ReadSegment]()))
	// rpcrdma2_chunk_lists: rdma_inv_handle, then the three lists Chunks
	// holds, as the header's fields after the prefix say.
	same("rpcrdma2_chunk_lists", flatten(sp, "rpcrdma2_chunk_lists", nil), header[5:9])
	same("rpcrdma2_propval", flatten(sp, "rpcrdma2_propval", nil), tags(reflect.TypeFor[Property]()))
	same("rpcrdma2_err_vers", flatten(sp, "rpcrdma2_err_vers", nil), tags(reflect.TypeFor[VersRange]()))
	same("rpcrdma2_err_write", flatten(sp, "rpcrdma2_err_write", nil), tags(reflect.TypeFor[WriteNeed]()))
	same("rpcrdma2_connprop", flatten(sp, "rpcrdma2_connprop", nil), header[len(header)-1:])

	// The shapes Go holds as slices: a list of entries is a slice of the
	// entry (RFC 4506 optional-data, "*next"), a counted array a slice.
	list := func(name, entry string) {
		t.Helper()
		checked[name] = true
		fs := sp.structs[name]
		if len(fs) != 2 || fs[0].typ != entry || fs[1].typ != name || !fs[1].ptr {
			t.Errorf("%s is not a list of %s: %+v", name, entry, fs)
		}
	}
	list("rpcrdma2_read_list", "rpcrdma2_read_segment") // chunks.Header.ReadList
	list("rpcrdma2_write_list", "rpcrdma2_write_chunk") // chunks.Header.WriteList
	checked["rpcrdma2_write_chunk"] = true              // chunks.WriteChunk
	if fs := sp.structs["rpcrdma2_write_chunk"]; len(fs) != 1 || fs[0].typ != "rpcrdma2_segment" || !fs[0].array {
		t.Errorf("rpcrdma2_write_chunk is not an array of rpcrdma2_segment: %+v", fs)
	}
	// The header types: MSG is the chunk lists and then the RPC message,
	// NOMSG the chunk lists alone.
	for _, name := range []string{"rpcrdma2_msg", "rpcrdma2_nomsg"} {
		checked[name] = true
		if fs := sp.structs[name]; len(fs) == 0 || fs[0].typ != "rpcrdma2_chunk_lists" {
			t.Errorf("%s does not start with rpcrdma2_chunk_lists: %+v", name, fs)
		}
	}
	if n := len(sp.structs["rpcrdma2_msg"]); n != 2 {
		t.Errorf("rpcrdma2_msg has %d fields, want the lists and rdma_rpc_first_word", n)
	}
	if n := len(sp.structs["rpcrdma2_nomsg"]); n != 1 {
		t.Errorf("rpcrdma2_nomsg has %d fields, want the lists alone", n)
	}

	// The error union: the discriminant, the arms in order, and each
	// code's arm as wide as the codec reads and writes it.
	checked["rpcrdma2_error"] = true
	u := sp.unions["rpcrdma2_error"]
	errTags := tags(reflect.TypeFor[Error]())
	var arms []string
	if len(u) > 0 {
		arms = append(arms, u[0].name)
	}
	width := map[string]int{"void": 0, "uint32": 1, "rpcrdma2_err_vers": 2, "rpcrdma2_err_write": 2}
	for _, a := range u[1:] {
		if a.typ != "void" && !slices.Contains(arms, a.name) {
			arms = append(arms, a.name)
		}
		w, ok := width[a.typ]
		if !ok {
			t.Errorf("rpcrdma2_error: an arm of type %s", a.typ)
		}
		for _, c := range a.cases {
			if c == "default" {
				if got := armWords(ErrorCode(0xffff)); got != w {
					t.Errorf("rpcrdma2_error: the default arm is %d words, the codec's %d", w, got)
				}
				continue
			}
			if got := armWords(ErrorCode(sp.consts[c])); got != w {
				t.Errorf("rpcrdma2_error: %s's arm is %d words, the codec's %d", c, w, got)
			}
		}
	}
	if !slices.Equal(arms, errTags) {
		t.Errorf("rpcrdma2_error: the XDR's discriminant and arms %v, Error's fields %v", arms, errTags)
	}
	// Every structure and union of the XDR was checked.
	for _, name := range sp.order {
		if !checked[name] {
			t.Errorf("the XDR's %s is not checked against the Go code", name)
		}
	}
}

// The parser reads what the draft has: a change to the file that its
// parser would miss fails here.
func TestXDRFile(t *testing.T) {
	sp := parseXDR(t, "testdata/rpcrdma-v2.x")
	got := fmt.Sprintf("%d constants, %d structures, %d unions", len(sp.consts), len(sp.structs), len(sp.unions))
	if want := "19 constants, 14 structures, 1 unions"; got != want {
		t.Errorf("parsed %s, want %s", got, want)
	}
	b, err := os.ReadFile("testdata/rpcrdma-v2.x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Copyright (c) 2010-2018 IETF Trust") || !strings.Contains(string(b), "FILE ENDS: baseops.x") {
		t.Error("testdata/rpcrdma-v2.x lacks the code component license or the end of baseops.x")
	}
}
