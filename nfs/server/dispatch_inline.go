package server

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// inlineCalls is a session's transport.InlineHandler: the calls that
// cannot block run to completion on the goroutine that polled them
// (Config.NoInlineCalls), as eRPC runs short handlers on its dispatch
// threads; the rest go to the session's workers (readCalls). A call the
// handler took and then finds may block (a GETATTR, LOOKUP or READ of a
// file not in the open-file cache, which opens it; a READ whose data is
// not in memory, a LOOKUP of a name not in the dentry cache, an access
// check that needs the caller's identity: call.nowait) is handed to a
// goroutine of its own, having sent nothing. Its worker state is the
// polling goroutine's: one call at a time.
type inlineCalls struct {
	ss *session
	w  worker
	// peek is Inline's scratch header (Inline runs under the
	// transport's lock, ServeInline without it).
	peek xdr.CallHeader
}

// Inline takes NULL, and GETATTR, LOOKUP and READ of NFSv3 whose file
// (LOOKUP: directory) is in the open-file cache, and a WRITE, SETATTR,
// CREATE, MKDIR or REMOVE that cannot wait (mayBlock); the others go to
// the session's workers, with no goroutine of their own. It runs under
// the transport's lock, and takes the open-file cache's (a leaf).
func (ic *inlineCalls) Inline(h *xdr.CallHeader, msg []byte) bool {
	switch {
	case h.Prog != nfs.ProgNFS || h.Vers != 3:
		return false
	case h.Proc == nfs.ProcNull:
		return true
	case h.Proc == nfs.ProcGetattr, h.Proc == nfs.ProcLookup, h.Proc == nfs.ProcRead, h.Proc == nfs.ProcWrite,
		h.Proc == nfs.ProcSetattr, h.Proc == nfs.ProcCreate, h.Proc == nfs.ProcMkdir, h.Proc == nfs.ProcRemove:
		return !ic.mayBlock(&ic.peek, msg)
	}
	return false
}

// ServeInline executes msg, unless it may block (its file left the
// open-file cache since Inline looked); its duration in the metrics
// counts from arrived.
func (ic *inlineCalls) ServeInline(msg []byte, arrived time.Time) {
	ss := ic.ss
	if ic.mayBlock(&ic.w.h, msg) {
		ic.handOff(msg, false)
		return
	}
	ic.w.arrived = arrived
	err := ss.dispatch(&ic.w, msg)
	ic.w.h = xdr.CallHeader{} // its credential aliases msg
	ss.inlineXID.Store(0)     // not answered here: a hand-off's is pending's
	switch {
	case err == errWouldBlock:
		ic.handOff(msg, true)
	case err != nil:
		go ss.close(err) // Close waits for the polling goroutine: not on it
	}
}

// InlineRunDone ends the durations of the calls the poll loop ran since
// the last (transport.InlineRunEnder): their replies are posted together
// after it returns.
func (ic *inlineCalls) InlineRunDone() { ic.ss.endRun() }

// handOff executes a copy of msg on a goroutine of its own; again: its
// execution began inline (OnCall was called).
func (ic *inlineCalls) handOff(msg []byte, again bool) {
	ss := ic.ss
	ss.s.inlineHandedOff.Add(1)
	cp := append([]byte(nil), msg...)
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		if err := ss.dispatch(&worker{again: again}, cp); err != nil {
			ss.close(err)
		}
	}()
}

// mayBlock reports whether the call msg may wait on the file system or
// for another thread: a GETATTR, LOOKUP or READ whose file (LOOKUP:
// directory) has no descriptor in the open-file cache (resolving its
// handle may read directories); a WRITE, SETATTR, CREATE, MKDIR or REMOVE
// but of a cached file (directory) of an export in memory by a caller
// whose identity the polling goroutine has. h is scratch, zeroed after.
func (ic *inlineCalls) mayBlock(h *xdr.CallHeader, msg []byte) bool {
	args, err := h.Unmarshal(msg)
	defer func() { *h = xdr.CallHeader{} }()
	if err != nil || h.Proc == nfs.ProcNull {
		return false // NULL; or a call dispatch refuses at once
	}
	r := xdr.NewReader(msg[args:])
	fh, err := r.Opaque(nfs3.FHSize)
	if err != nil {
		return false // GARBAGE_ARGS at once
	}
	x := ic.ss.s.exports.Load().byHandle(fh)
	if x == nil {
		return true
	}
	switch h.Proc {
	case nfs.ProcGetattr, nfs.ProcLookup, nfs.ProcRead:
		return !x.Handler.files.cached(fh)
	}
	// A WRITE or SETATTR, or a CREATE, MKDIR or REMOVE (fh: the
	// directory), is taken only where nothing it does can wait: a file of
	// an export in memory (tmpfs, ramfs: no device, a sync or a truncate
	// that returns at once) in the cache (a WRITE's open for writing; a
	// SETATTR after an exclusive CREATE finds the file CREATE left
	// there), and a caller whose identity the polling goroutine has
	// (permit and Server.as then never wait for an identity thread). Its
	// duplicate request cache entry is made before it runs, so it must
	// not be found to block after (drc.abandon is the guard).
	cached := x.Handler.files.cached
	if h.Proc == nfs.ProcWrite {
		cached = x.Handler.files.cachedRW
	}
	if !x.Handler.inMemory || !cached(fh) {
		return true
	}
	c, refusal := ic.ss.caller(h, msg[args:])
	return refusal == nil && ic.ss.s.ids.HandsOff(c.cred)
}
