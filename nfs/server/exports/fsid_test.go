package exports

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExportsFSID: fsid= is canonical in Export.FSID (0 and root are
// "root"; a UUID loses its dashes and case), and two exports of one fsid
// are refused with the line of the second, naming the first.
func TestExportsFSID(t *testing.T) {
	tab, err := Parse("exports", []byte(`/a *(fsid=0)
/b *(fsid=12)
/c *(fsid=0123ABCD-89ab-cdef-0123-456789ABCDEF)
/d *(rw)
/e *(rw)
`))
	require.NoError(t, err)
	var got []string
	for _, e := range tab.Exports {
		got = append(got, e.FSID)
	}
	require.Equal(t, []string{"root", "12", "0123abcd89abcdef0123456789abcdef", "", ""}, got,
		"exports without fsid= do not collide")

	for _, tc := range []struct {
		text string
		line int
		msg  string
	}{
		{"/a *(fsid=3)\n/b *(rw)\n/c 10.0.0.1(fsid=3)\n", 3, "fsid 3: /a has it already (line 1)"},
		{"/a *(fsid=root)\n/b *(fsid=0)\n", 2, "fsid root: /a has it already (line 1)"},
		{"/a *(fsid=0123abcd89abcdef0123456789abcdef)\n\n/b *(fsid=0123ABCD-89AB-CDEF-0123-456789ABCDEF)\n", 3,
			"/a has it already"},
	} {
		_, err := Parse("exports", []byte(tc.text))
		var pe *Error
		require.True(t, errors.As(err, &pe), "%q: %v", tc.text, err)
		require.Equal(t, tc.line, pe.Line, "%q", tc.text)
		require.Contains(t, pe.Msg, tc.msg)
	}
	for v, want := range map[string]string{"0": "root", "root": "root", "4294967295": "4294967295",
		"00112233-4455-6677-8899-aabbccddeeff": "00112233445566778899aabbccddeeff"} {
		got, err := ParseFSID(v)
		require.NoError(t, err, v)
		require.Equal(t, want, got, v)
	}
	for _, v := range []string{"4294967296", "-1", "abc", "00112233-4455-6677-8899-aabbccddeef"} {
		_, err := ParseFSID(v)
		require.Error(t, err, v)
	}
}
