package identity

import "errors"

// ErrInvalid is wrapped by every error that reports an invalid [Identity] or
// holder string: an empty, too long or badly formed Node, Cluster or Instance,
// or a holder that is not of the form node/cluster/instance. Test for it with
// errors.Is. The wrapping error's message names the field and quotes the value.
var ErrInvalid = errors.New("leasehold: invalid identity")

// invalidError is the concrete type of every validation error. Its message is
// the detailed one ("identity: Cluster \"eu west\" contains ..."), not the text
// of ErrInvalid, which it unwraps to.
type invalidError struct {
	msg string // without the "identity: " prefix
}

func (e *invalidError) Error() string { return "identity: " + e.msg }

func (e *invalidError) Unwrap() error { return ErrInvalid }
