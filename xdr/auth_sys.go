package xdr

// Limits of an AUTH_SYS credential (RFC 5531 Appendix A).
const (
	// MaxMachineNameLen bounds authsys_parms.machinename: string machinename<255>.
	MaxMachineNameLen = 255
	// MaxAuthSysGIDs bounds authsys_parms.gids: unsigned int gids<16>.
	MaxAuthSysGIDs = 16
)

// AuthSys is the body of an AUTH_SYS credential (RFC 5531 Appendix A):
//
//	struct authsys_parms {
//	    unsigned int stamp;
//	    string machinename<255>;
//	    unsigned int uid;
//	    unsigned int gid;
//	    unsigned int gids<16>;
//	};
//
// The verifier that goes with an AUTH_SYS credential is AUTH_NONE.
type AuthSys struct {
	Stamp uint32
	// MachineName aliases the decoded buffer after Unmarshal.
	MachineName []byte
	UID         uint32
	GID         uint32
	// GIDs is reused by Unmarshal: once its capacity reaches MaxAuthSysGIDs
	// (the first Unmarshal that needs to grow it allocates exactly that),
	// decoding allocates nothing.
	GIDs []uint32
}

// EncodedLen returns the number of bytes Append adds.
func (a *AuthSys) EncodedLen() int {
	return 4 + 4 + RoundUp(len(a.MachineName)) + 4 + 4 + 4 + 4*len(a.GIDs)
}

// Append appends the XDR encoding of the authsys_parms (the credential body,
// without the opaque_auth flavor and length). Limits are not enforced: a
// machine name over 255 bytes or more than 16 gids produce a body that
// conforming peers (and Unmarshal) reject. Linux clients send only the first
// 16 groups of a process; do the same.
func (a *AuthSys) Append(b []byte) []byte {
	b = AppendUint32(b, a.Stamp)
	b = AppendOpaque(b, a.MachineName)
	b = AppendUint32(b, a.UID)
	b = AppendUint32(b, a.GID)
	b = AppendUint32(b, uint32(len(a.GIDs)))
	for _, g := range a.GIDs {
		b = AppendUint32(b, g)
	}
	return b
}

// OpaqueAuth returns an AUTH_SYS credential whose body is a's encoding
// appended to buf[:0]. Pass a buffer of capacity MaxAuthBytes to avoid an
// allocation.
func (a *AuthSys) OpaqueAuth(buf []byte) OpaqueAuth {
	return OpaqueAuth{Flavor: FlavorSys, Body: a.Append(buf[:0])}
}

// Unmarshal decodes an AUTH_SYS credential body (RFC 5531 Appendix A) into
// a. The body must hold exactly one authsys_parms: a machine name over 255
// bytes or more than 16 gids fail with an error wrapping ErrTooLong, a short
// body with one wrapping ErrShortBuffer, and leftover bytes with
// ErrTrailingData. (Linux's server answers the first with GARBAGE_ARGS and
// the second with AUTH_BADCRED; it parses the credential as a stream and
// ignores the body length, so leftover bytes would be read as the verifier
// and fail there.) The gid count is checked against both the limit and the
// bytes present before anything is stored. On error a's contents are
// unspecified.
func (a *AuthSys) Unmarshal(body []byte) error {
	r := NewReader(body)
	var err error
	if a.Stamp, err = r.Uint32(); err != nil {
		return errAuthSysShort
	}
	if a.MachineName, err = r.String(MaxMachineNameLen); err != nil {
		if err == ErrTooLong {
			return errAuthSysNameTooLong
		}
		return errAuthSysShort
	}
	if r.Len() < 12 {
		return errAuthSysShort
	}
	a.UID, _ = r.Uint32()
	a.GID, _ = r.Uint32()
	n, _ := r.Uint32()
	if n > MaxAuthSysGIDs {
		return errAuthSysGIDsTooLong
	}
	if r.Len() < 4*int(n) {
		return errAuthSysShort
	}
	if cap(a.GIDs) < int(n) {
		a.GIDs = make([]uint32, n, MaxAuthSysGIDs)
	}
	a.GIDs = a.GIDs[:n]
	for i := range a.GIDs {
		a.GIDs[i], _ = r.Uint32()
	}
	if r.Len() != 0 {
		return errAuthSysTrailing
	}
	return nil
}

var (
	errAuthSysShort       = &parseError{"AUTH_SYS credential", ErrShortBuffer}
	errAuthSysNameTooLong = &parseError{"AUTH_SYS machinename longer than 255 bytes", ErrTooLong}
	errAuthSysGIDsTooLong = &parseError{"AUTH_SYS credential with more than 16 gids", ErrTooLong}
	errAuthSysTrailing    = &parseError{"AUTH_SYS credential", ErrTrailingData}
)
