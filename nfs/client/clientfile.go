package client

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"sync/atomic"
)

// File is an open regular file of an Export. It implements io.Reader,
// io.ReaderAt, io.Writer, io.WriterAt, io.Seeker and io.Closer, and
// fs.File.
//
// Sequential reads (Read) are served by read-ahead: MaxInFlight READs of
// rsize bytes are kept in flight ahead of the offset. ReadAt splits a
// request into rsize READs issued at once. Sequential writes (Write) are
// write-behind: data is gathered into wsize WRITEs sent UNSTABLE (RFC 1813
// §3.3.7), MaxInFlight at a time, and Write returns once its data is
// copied; WriteAt sends its WRITEs at once and waits for their replies.
// Data written UNSTABLE is kept until a COMMIT (Sync, Close, or every 64
// MiB) returns the verifier the WRITEs returned; WRITEs whose verifier
// differs (the server restarted and may have lost them) are sent again,
// FILE_SYNC (§3.3.21). An error of a write-behind WRITE is returned by a
// later Write, Sync or Close.
//
// The methods of a File may be called from several goroutines; reads see
// the File's own writes (they wait for the WRITEs in flight).
type File struct {
	c     *Client
	fh    FH
	name  string
	ctx   context.Context
	depth int
	rsize int
	wsize int
	pre   int // writePrefixLen of the file's WRITEs

	mu       sync.Mutex
	off      int64
	sizeHint int64 // the size at open, to bound read-ahead
	closed   bool

	ra    []*raBlock // read-ahead, in offset order
	raPos int        // bytes of ra[0] consumed

	sem         chan struct{} // one per READ or WRITE in flight
	cur         *wbBlock      // the block Write fills
	sent        []*wbBlock    // sent, not yet committed
	uncommitted int
	wbErr       error

	resends atomic.Int64
}

// commitEvery is how many bytes of unstable writes a File keeps before it
// commits them.
const commitEvery = 64 << 20

// raBlock is one read-ahead READ. Its data is in the reply buffer of io:
// over a *transport.Conn the server's RDMA Write placed it there (direct
// data placement, Client.Read); over another Caller, the reply was copied
// there.
type raBlock struct {
	off  int64
	io   *ioBuf
	data []byte
	eof  bool
	err  error
	done chan struct{}
}

// wbBlock is one WRITE, kept until committed. msg is the WRITE call
// itself: pre bytes of room for its header (written when it is sent),
// then the data, which Write and WriteAt copy there and nowhere else.
type wbBlock struct {
	off  int64
	msg  []byte
	pre  int
	res  WriteResult
	err  error
	done chan struct{}
}

// data returns the block's data.
func (b *wbBlock) data() []byte { return b.msg[b.pre:] }

// newBlock returns an empty block at off, with room for wsize bytes and
// their XDR pad.
func (f *File) newBlock(off int64) *wbBlock {
	return &wbBlock{off: off, msg: getBuf(f.pre + f.wsize + 4)[:f.pre], pre: f.pre}
}

// bufPools hold read and write buffers, by size.
var bufPools sync.Map // int -> *sync.Pool

func getBuf(n int) []byte {
	p, _ := bufPools.LoadOrStore(n, &sync.Pool{New: func() any { b := make([]byte, n); return &b }})
	return *p.(*sync.Pool).Get().(*[]byte)
}

func putBuf(b []byte) {
	b = b[:cap(b)]
	if p, ok := bufPools.Load(len(b)); ok {
		p.(*sync.Pool).Put(&b)
	}
}

// OpenFile opens the regular file name with os.O_* flags: O_CREATE
// creates it with permissions perm if missing (O_EXCL: fails if it exists,
// a GUARDED CREATE), O_TRUNC truncates it, O_APPEND starts at its end.
// ctx bounds every call the File makes.
func (e *Export) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*File, error) {
	f, err := e.openFile(ctx, name, flag, perm)
	if err != nil {
		return nil, clientPathErr("open", name, err)
	}
	return f, nil
}

func (e *Export) openFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*File, error) {
	fh, a, err := e.lookup(ctx, name, true)
	if flag&os.O_CREATE != 0 && (errors.Is(err, fs.ErrNotExist) || (err == nil && flag&os.O_EXCL != 0)) {
		dir, base, perr := e.parent(ctx, name)
		if perr != nil {
			return nil, perr
		}
		mode, size := uint32(perm.Perm()), uint64(0)
		how := CreateHow{Mode: Unchecked, Attr: &SetAttr{Mode: &mode, Size: &size}}
		if flag&os.O_EXCL != 0 {
			how.Mode = Guarded
		}
		if fh, a, err = e.Client.Create(ctx, dir, base, how); err != nil {
			return nil, err
		}
		if a == nil {
			if a, err = e.Client.Getattr(ctx, fh); err != nil {
				return nil, err
			}
		}
	} else if err != nil {
		return nil, err
	}
	switch a.Type {
	case TypeReg:
	case TypeDir:
		return nil, &Error{Proc: "open", Status: StatusIsDir}
	default:
		return nil, &Error{Proc: "open", Status: StatusInval}
	}
	if flag&os.O_TRUNC != 0 && a.Size != 0 {
		size := uint64(0)
		if _, err := e.Client.Setattr(ctx, fh, &SetAttr{Size: &size}, nil); err != nil {
			return nil, err
		}
		a.Size = 0
	}
	f := e.Client.newFile(ctx, fh, path.Base(name), int64(a.Size))
	if flag&os.O_APPEND != 0 {
		f.off = int64(a.Size)
	}
	return f, nil
}

// Open opens name for reading.
func (e *Export) Open(ctx context.Context, name string) (*File, error) {
	return e.OpenFile(ctx, name, os.O_RDONLY, 0)
}

// Create creates name with permissions 0644, or truncates it, and opens
// it for reading and writing.
func (e *Export) Create(ctx context.Context, name string) (*File, error) {
	return e.OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenHandle returns a File for the regular file fh; size bounds
// read-ahead (-1: unknown).
func (c *Client) OpenHandle(ctx context.Context, fh FH, size int64) *File {
	return c.newFile(ctx, fh, "", size)
}

func (c *Client) newFile(ctx context.Context, fh FH, name string, size int64) *File {
	rsize, wsize := c.IOSize()
	depth := c.maxInFlight()
	if size < 0 {
		size = 1<<63 - 1
	}
	return &File{c: c, fh: fh, name: name, ctx: ctx, depth: depth, rsize: rsize, wsize: wsize,
		pre: c.writePrefixLen(fh), sizeHint: size, sem: make(chan struct{}, depth)}
}

// Name returns the file's base name.
func (f *File) Name() string { return f.name }

// Handle returns the file's handle.
func (f *File) Handle() FH { return f.fh }

// Resends counts WRITEs sent again because the server's verifier changed.
func (f *File) Resends() int64 { return f.resends.Load() }

// errClosed is fs.ErrClosed for a File used after Close.
var errClosed = fs.ErrClosed

func (f *File) opErr(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Read reads from the file's offset, through read-ahead.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, f.opErr("read", errClosed)
	}
	if err := f.drainLocked(); err != nil {
		return 0, f.opErr("read", err)
	}
	n := 0
	for n < len(p) {
		if len(f.ra) == 0 || f.ra[0].off+int64(f.raPos) != f.off {
			f.resetRA()
			f.fillRA()
		}
		b := f.ra[0]
		if n > 0 && !isDone(b.done) {
			break
		}
		<-b.done
		if b.err != nil {
			f.resetRA()
			return n, f.opErr("read", b.err)
		}
		if len(b.data) == 0 && !b.eof {
			b.eof = true // a server that makes no progress: treat as the end
		}
		k := copy(p[n:], b.data[f.raPos:])
		n += k
		f.raPos += k
		f.off += int64(k)
		if f.raPos < len(b.data) {
			continue
		}
		if b.eof {
			f.resetRA()
			if n == 0 {
				return 0, io.EOF
			}
			break
		}
		f.ra = f.ra[1:]
		f.raPos = 0
		putIOBuf(b.io)
		f.fillRA()
	}
	return n, nil
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fillRA keeps depth READs in flight from the offset on, not beyond the
// size at open (but always one).
func (f *File) fillRA() {
	for len(f.ra) < f.depth {
		off := f.off
		if n := len(f.ra); n > 0 {
			off = f.ra[n-1].off + int64(f.rsize)
			if off >= f.sizeHint {
				return
			}
		}
		b := &raBlock{off: off, io: getIOBuf(f.rsize), done: make(chan struct{})}
		f.ra = append(f.ra, b)
		go func() {
			defer close(b.done)
			if _, ok := f.c.rpc.(IntoCaller); ok {
				// The server's RDMA Write places the data in the
				// block's buffer: Read copies it once, into p.
				buf := grow(b.io.reply, f.rsize)[:f.rsize]
				var n int
				n, b.eof, b.err = f.c.Read(f.ctx, f.fh, uint64(b.off), buf)
				b.io.reply, b.data = buf, buf[:n]
				return
			}
			b.data, b.eof, b.io.reply, b.err = f.c.readReply(f.ctx, f.fh, uint64(b.off), f.rsize, b.io)
		}()
	}
}

// resetRA drops the read-ahead; buffers go back to the free list once
// their READs are done.
func (f *File) resetRA() {
	for _, b := range f.ra {
		go func() { <-b.done; putIOBuf(b.io) }()
	}
	f.ra, f.raPos = nil, 0
}

// ReadAt reads len(p) bytes at off with READs of rsize bytes in flight at
// once, straight into p.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, f.opErr("readat", fs.ErrInvalid)
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, f.opErr("readat", errClosed)
	}
	err := f.drainLocked()
	f.mu.Unlock()
	if err != nil {
		return 0, f.opErr("readat", err)
	}
	type piece struct {
		n   int
		eof bool
		err error
	}
	nPieces := (len(p) + f.rsize - 1) / f.rsize
	pieces := make([]piece, nPieces)
	var wg sync.WaitGroup
	for i := range nPieces {
		lo, hi := i*f.rsize, min(len(p), (i+1)*f.rsize)
		f.sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-f.sem }()
			pc := &pieces[i]
			for lo+pc.n < hi && !pc.eof && pc.err == nil {
				var k int
				k, pc.eof, pc.err = f.c.Read(f.ctx, f.fh, uint64(off)+uint64(lo+pc.n), p[lo+pc.n:hi])
				pc.n += k
				if k == 0 && !pc.eof && pc.err == nil {
					pc.eof = true // a server that makes no progress: treat as the end
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for i, pc := range pieces {
		n += pc.n
		if pc.err != nil {
			return n, f.opErr("readat", pc.err)
		}
		if lo := i * f.rsize; lo+pc.n < min(len(p), (i+1)*f.rsize) {
			return n, io.EOF
		}
	}
	return n, nil
}

// Write writes p at the file's offset, write-behind.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, f.opErr("write", errClosed)
	}
	if f.wbErr != nil {
		return 0, f.opErr("write", f.wbErr)
	}
	f.resetRA()
	n := 0
	for n < len(p) {
		if f.cur != nil && f.cur.off+int64(len(f.cur.data())) != f.off {
			f.dispatchLocked()
		}
		if f.cur == nil {
			f.cur = f.newBlock(f.off)
		}
		cur := f.cur
		have := len(cur.msg)
		k := copy(cur.msg[have:cur.pre+f.wsize], p[n:])
		cur.msg = cur.msg[:have+k]
		n += k
		f.off += int64(k)
		if len(cur.data()) == f.wsize {
			f.dispatchLocked()
		}
	}
	if f.uncommitted >= commitEvery {
		if err := f.commitLocked(); err != nil {
			return n, f.opErr("write", err)
		}
	}
	return n, nil
}

// WriteAt writes p at off: its WRITEs go at once, and WriteAt returns when
// they are answered (their data committed later, as Write's).
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, f.opErr("writeat", fs.ErrInvalid)
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, f.opErr("writeat", errClosed)
	}
	if f.wbErr != nil {
		f.mu.Unlock()
		return 0, f.opErr("writeat", f.wbErr)
	}
	f.resetRA()
	if f.cur != nil {
		f.dispatchLocked()
	}
	var blocks []*wbBlock
	for lo := 0; lo < len(p); lo += f.wsize {
		hi := min(len(p), lo+f.wsize)
		b := f.newBlock(off + int64(lo))
		b.msg = append(b.msg, p[lo:hi]...)
		f.cur = b
		f.dispatchLocked()
		blocks = append(blocks, b)
	}
	f.mu.Unlock()
	for i, b := range blocks {
		<-b.done
		if b.err != nil {
			return i * f.wsize, f.opErr("writeat", b.err)
		}
	}
	return len(p), nil
}

// dispatchLocked sends f.cur as an UNSTABLE WRITE once a slot is free.
func (f *File) dispatchLocked() {
	b := f.cur
	f.cur = nil
	if b == nil || len(b.data()) == 0 {
		if b != nil {
			putBuf(b.msg)
		}
		return
	}
	b.done = make(chan struct{})
	f.sent = append(f.sent, b)
	f.uncommitted += len(b.data())
	f.sem <- struct{}{}
	go func() {
		defer close(b.done)
		defer func() { <-f.sem }()
		b.res, b.err = f.writeBlock(b, Unstable)
	}()
}

// writeBlock sends block b as one WRITE (its message built in place); the
// rest of a short WRITE goes by writeAll.
func (f *File) writeBlock(b *wbBlock, stable StableHow) (WriteResult, error) {
	io := getIOBuf(0)
	defer putIOBuf(io)
	res, err := f.c.sendWrite(f.ctx, f.fh, uint64(b.off), b.msg, b.pre, stable, io)
	if err != nil {
		return res, err
	}
	data := b.data()
	if res.Count == len(data) {
		return res, nil
	}
	if res.Count == 0 {
		return res, &Error{Proc: "NFS3 WRITE", Status: StatusIO}
	}
	rest, err := f.writeAll(b.off+int64(res.Count), data[res.Count:], stable)
	rest.Count += res.Count
	rest.Committed = min(rest.Committed, res.Committed)
	return rest, err
}

// writeAll writes p at off, again from where a short WRITE stopped; the
// result holds the lowest stability and the last verifier.
func (f *File) writeAll(off int64, p []byte, stable StableHow) (WriteResult, error) {
	res := WriteResult{Committed: FileSync}
	for done := 0; done < len(p); {
		r, err := f.c.Write(f.ctx, f.fh, uint64(off)+uint64(done), p[done:], stable)
		if err != nil {
			return res, err
		}
		if r.Count == 0 {
			return res, &Error{Proc: "NFS3 WRITE", Status: StatusIO}
		}
		done += r.Count
		res.Count = done
		res.Committed = min(res.Committed, r.Committed)
		res.Verf = r.Verf
	}
	return res, nil
}

// drainLocked sends the block being filled and waits for every WRITE in
// flight; the first error is kept.
func (f *File) drainLocked() error {
	if f.cur != nil {
		f.dispatchLocked()
	}
	for _, b := range f.sent {
		<-b.done
		if b.err != nil && f.wbErr == nil {
			f.wbErr = b.err
		}
	}
	return f.wbErr
}

// maxVerfRetries bounds the rounds of resending after a verifier change.
const maxVerfRetries = 3

// commitLocked drains and commits the unstable WRITEs; WRITEs whose
// verifier is not COMMIT's are sent again FILE_SYNC.
func (f *File) commitLocked() error {
	if err := f.drainLocked(); err != nil {
		return err
	}
	defer func() {
		for _, b := range f.sent {
			putBuf(b.msg)
		}
		f.sent, f.uncommitted = nil, 0
	}()
	for try := 0; ; try++ {
		unstable := false
		for _, b := range f.sent {
			unstable = unstable || b.res.Committed != FileSync
		}
		if !unstable {
			return nil
		}
		verf, err := f.c.Commit(f.ctx, f.fh, 0, 0)
		if err != nil {
			f.wbErr = err
			return err
		}
		stale := false
		for _, b := range f.sent {
			if b.res.Committed == FileSync || b.res.Verf == verf {
				b.res.Committed = FileSync
				continue
			}
			if try == maxVerfRetries {
				f.wbErr = ErrVerifierChanged
				return f.wbErr
			}
			stale = true
			f.resends.Add(1)
			if b.res, err = f.writeBlock(b, FileSync); err != nil {
				f.wbErr = err
				return err
			}
			// A FILE_SYNC reply is stable whatever its verifier.
			b.res.Committed = FileSync
		}
		if !stale {
			return nil
		}
	}
}

// Sync sends what Write gathered, waits for every WRITE and commits them
// (RFC 1813 §3.3.21).
func (f *File) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.opErr("sync", errClosed)
	}
	return f.opErr("sync", f.commitLocked())
}

// Close flushes and commits the writes, and releases the read-ahead; it
// returns the first error of a write-behind WRITE or the COMMIT.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.opErr("close", errClosed)
	}
	err := f.commitLocked()
	f.resetRA()
	f.closed = true
	return f.opErr("close", err)
}

// Seek sets the offset of the next Read or Write (io.Seeker).
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, f.opErr("seek", errClosed)
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		if err := f.drainLocked(); err != nil {
			return 0, f.opErr("seek", err)
		}
		a, err := f.c.Getattr(f.ctx, f.fh)
		if err != nil {
			return 0, f.opErr("seek", err)
		}
		offset += int64(a.Size)
	default:
		return 0, f.opErr("seek", fs.ErrInvalid)
	}
	if offset < 0 {
		return 0, f.opErr("seek", fs.ErrInvalid)
	}
	f.off = offset
	return offset, nil
}

// Stat returns the file's attributes (GETATTR after the WRITEs in flight).
func (f *File) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.drainLocked(); err != nil {
		return nil, f.opErr("stat", err)
	}
	a, err := f.c.Getattr(f.ctx, f.fh)
	if err != nil {
		return nil, f.opErr("stat", err)
	}
	return &nfsFileInfo{name: f.name, attr: *a}, nil
}

// Truncate changes the file's size (SETATTR).
func (f *File) Truncate(size int64) error {
	if size < 0 {
		return f.opErr("truncate", fs.ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.drainLocked(); err != nil {
		return f.opErr("truncate", err)
	}
	f.resetRA()
	s := uint64(size)
	_, err := f.c.Setattr(f.ctx, f.fh, &SetAttr{Size: &s}, nil)
	return f.opErr("truncate", err)
}

var (
	_ io.ReadWriteSeeker = (*File)(nil)
	_ io.ReaderAt        = (*File)(nil)
	_ io.WriterAt        = (*File)(nil)
	_ io.Closer          = (*File)(nil)
	_ fs.File            = (*File)(nil)
)
