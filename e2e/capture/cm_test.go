package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCM(t *testing.T) {
	mad := make([]byte, MADSize)
	mad[0], mad[1], mad[2], mad[3] = 1, mgmtClassCM, 2, 3
	mad[17] = byte(CMREP)
	copy(mad[60:], []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3})
	m, ok := ParseCM(mad)
	require.True(t, ok)
	assert.Equal(t, CMREP, m.Attr)
	assert.Len(t, m.PrivateData, 196)
	pd, ok := RPCRDMAPrivateData(m.PrivateData)
	require.True(t, ok)
	assert.Equal(t, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3}, pd)

	mad[17] = byte(CMMRA)
	m, ok = ParseCM(mad)
	require.True(t, ok)
	assert.Nil(t, m.PrivateData)

	_, ok = ParseCM(mad[:MADSize-1])
	assert.False(t, ok, "short MAD")
	mad[1] = 0x01 // Subnet Management
	_, ok = ParseCM(mad)
	assert.False(t, ok, "other class")

	for a, want := range map[CMAttr]string{CMREQ: "REQ", CMMRA: "MRA", CMREJ: "REJ", CMREP: "REP",
		CMRTU: "RTU", CMDREQ: "DREQ", CMDREP: "DREP", 0x0019: "CMAttr(0x0019)"} {
		assert.Equal(t, want, a.String())
	}
}

func TestRPCRDMAPrivateData(t *testing.T) {
	// Any alignment (RFC 8797 §5.2), after another header.
	pd := append(make([]byte, 37), 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3, 0, 0)
	got, ok := RPCRDMAPrivateData(pd)
	require.True(t, ok)
	assert.Equal(t, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}, got)
	_, ok = RPCRDMAPrivateData(pd[:44]) // identifier, but fewer than 8 bytes
	assert.False(t, ok)
	_, ok = RPCRDMAPrivateData(make([]byte, 56))
	assert.False(t, ok)
}
