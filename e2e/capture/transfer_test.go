package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChunkData(t *testing.T) {
	w := func(rkey uint32, va uint64, data string) Transfer {
		return Transfer{Kind: KindWrite, Initiator: server, Target: client, RKey: rkey, VA: va, Data: []byte(data)}
	}
	ts := []Transfer{
		w(9, 0x1005, "fghij"),
		w(9, 0x1000, "abcde"),
		w(9, 0x1003, "defg"), // overlaps both: a retransmission
		w(7, 0x0, "xyz"),
		{Kind: KindReadRequest, Initiator: server, Target: client, RKey: 9, VA: 0x1000, Data: []byte("READ")},
		w(8, 0x10, "other"),
	}
	ts[5].Initiator = client // the other direction: not ours

	got, err := ChunkData(ts, KindWrite, server, client, []Segment{{9, 8, 0x1002}, {7, 3, 0}, {9, 0, 0x1000}})
	require.NoError(t, err)
	assert.Equal(t, "cdefghijxyz", string(got))

	got, err = ChunkData(ts, KindReadRequest, server, client, []Segment{{9, 4, 0x1000}})
	require.NoError(t, err)
	assert.Equal(t, "READ", string(got))

	for name, chunk := range map[string][]Segment{
		"past the end":    {{9, 11, 0x1000}},
		"before the data": {{9, 2, 0xfff}},
		"unknown handle":  {{1, 1, 0}},
		"other direction": {{8, 1, 0x10}},
		"wraps around":    {{9, 16, 0xfffffffffffffff8}},
	} {
		_, err := ChunkData(ts, KindWrite, server, client, chunk)
		assert.ErrorIs(t, err, ErrChunkData, name)
	}
	got, err = ChunkData(nil, KindWrite, server, client, nil)
	assert.NoError(t, err)
	assert.Empty(t, got)
}

func TestTransfersUnansweredRead(t *testing.T) {
	ms := []Message{
		{Src: server, Dst: client, Kind: KindReadRequest, FirstPSN: 5, RETH: RETH{RKey: 1, DMALength: 3}},
		{Src: client, Dst: server, Kind: KindReadResponse, FirstPSN: 6, Payload: []byte("abc")},
	}
	assert.Empty(t, Transfers(ms))
}
