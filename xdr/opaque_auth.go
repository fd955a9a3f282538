package xdr

// OpaqueAuth is an ONC RPC credential or verifier (RFC 5531 §8.2):
//
//	struct opaque_auth {
//	    auth_flavor flavor;
//	    opaque body<400>;
//	};
//
// Any flavor is carried; the body is opaque to the RPC layer. After a decode,
// Body aliases the decoded buffer.
type OpaqueAuth struct {
	Flavor AuthFlavor
	Body   []byte
}

// EncodedLen returns the number of bytes Append adds.
func (a OpaqueAuth) EncodedLen() int { return 8 + RoundUp(len(a.Body)) }

// Append appends the XDR encoding of a. It does not check the
// MAX_AUTH_BYTES limit: a body over 400 bytes produces a message that
// conforming peers (and Unmarshal here) reject.
func (a OpaqueAuth) Append(b []byte) []byte {
	b = AppendUint32(b, uint32(a.Flavor))
	return AppendOpaque(b, a.Body)
}

// Decode decodes an opaque_auth from r. A body longer than MaxAuthBytes is
// rejected with ErrTooLong before anything is consumed (RFC 5531 §8.2:
// "opaque body<400>"); Linux applies the same limit (RPC_MAX_AUTH_SIZE).
// On error a is left unchanged and r does not move past the flavor.
func (a *OpaqueAuth) Decode(r *Reader) error {
	start := r.off
	f, err := r.Uint32()
	if err != nil {
		return err
	}
	body, err := r.Opaque(MaxAuthBytes)
	if err != nil {
		r.off = start
		return err
	}
	a.Flavor, a.Body = AuthFlavor(f), body
	return nil
}

// AuthSys parses the body of an AUTH_SYS credential into dst (RFC 5531
// Appendix A). It fails with ErrAuthFlavor if a is not AUTH_SYS.
func (a OpaqueAuth) AuthSys(dst *AuthSys) error {
	if a.Flavor != FlavorSys {
		return ErrAuthFlavor
	}
	return dst.Unmarshal(a.Body)
}
