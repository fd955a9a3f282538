package server

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// TestTransportCounters: every counter of transport.Stats (a uint64
// field) has one entry in transportCounters, in the field's order, named
// rpcrdma_<the field's words>_total, in which each word is at least two
// letters and a word of the HELP text ("BadXIDs": bad_xids, not
// bad_xi_ds); names are unique.
func TestTransportCounters(t *testing.T) {
	st := reflect.TypeFor[transport.Stats]()
	var fields []string
	for i := range st.NumField() {
		if st.Field(i).Type.Kind() == reflect.Uint64 {
			fields = append(fields, st.Field(i).Name)
		}
	}
	var listed []string
	names := map[string]bool{}
	for _, tc := range transportCounters {
		listed = append(listed, tc.field)
		require.False(t, names[tc.name], "%s twice", tc.name)
		names[tc.name] = true
		require.Regexp(t, `^rpcrdma_[a-z_]+_total$`, tc.name)
		words := strings.Split(strings.TrimSuffix(strings.TrimPrefix(tc.name, "rpcrdma_"), "_total"), "_")
		require.Equal(t, strings.ToLower(tc.field), strings.Join(words, ""), "%s: the field's words", tc.name)
		help := regexp.MustCompile(`[a-z0-9]+`).FindAllString(strings.ToLower(tc.help), -1)
		for _, w := range words {
			require.GreaterOrEqual(t, len(w), 2, "%s: %q", tc.name, w)
			require.True(t, slices.Contains(help, w) || slices.Contains(help, strings.TrimSuffix(w, "s")) || slices.Contains(help, w+"s"),
				"%s: %q is not a word of its HELP %q", tc.name, w, tc.help)
		}
	}
	require.Equal(t, fields, listed)
}
