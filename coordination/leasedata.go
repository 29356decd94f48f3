package coordination

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// MaxDataLen is the longest data an election's lease row carries
// (Lease.SetData, Lease.SetDataIn), in bytes: 60 KiB, within the 64 KiB
// of MySQL's TEXT column.
const MaxDataLen = 60 << 10

// Every lease row has a data column. A pool's rows use it for their
// protocol (generations, acknowledgements); an election's row is the
// holder's to use: a string kept with the lease across terms, written only
// under a term (the holder's session and epoch, live by the database
// clock), so a paused or partitioned ex-holder can never overwrite what a
// newer term wrote. Scheduled workers (package workers) keep their
// progress in it.

// Data reads the data of the lease row, and the database clock at the
// read. Any process may read it; it is what the last term that wrote it
// left, whoever holds the lease now.
func (l *Lease) Data(ctx context.Context) (data string, now time.Time, err error) {
	rows, err := l.f.readData(ctx, l.name)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("coordination: read the data of lease %q: %w", l.name, err)
	}
	if len(rows) != 1 {
		return "", time.Time{}, fmt.Errorf("coordination: read the data of lease %q: no such row", l.name)
	}
	return rows[0].Data, rows[0].Now, nil
}

// SetData writes data into the lease row, only while this term holds the
// lease: same session and epoch, unexpired by the database clock. When the
// term is over it writes nothing and returns an error wrapping ErrFenced
// (a *FenceError). Only an election's lease carries data of its holder's;
// a pool membership's is refused with ErrInvalidConfig, as is data longer
// than MaxDataLen.
func (l *Lease) SetData(ctx context.Context, data string) error {
	if err := l.checkData(data); err != nil {
		return err
	}
	if !l.Valid() {
		return &FenceError{Name: l.name, Epoch: l.epoch, Reason: "this process no longer trusts the term (" + l.Check().Error() + ")"}
	}
	ok, err := l.f.writeData(ctx, l.sess.id, store.Term{Name: l.name, Epoch: l.epoch}, data)
	if err != nil {
		return fmt.Errorf("coordination: write the data of lease %q epoch %d: %w", l.name, l.epoch, err)
	}
	if !ok {
		return &FenceError{Name: l.name, Epoch: l.epoch, Reason: "the term is over by the database (data not written)"}
	}
	return nil
}

// SetDataIn writes data into the lease row inside the caller's transaction
// tx, after the fencing check of Fence: the write commits with tx or not
// at all, so the caller's own changes and the data commit together, and
// only under this term. On an error the caller must roll back; it wraps
// ErrFenced when the term is over, ErrNotInTransaction for a handle that
// is not a transaction, ErrInvalidConfig as SetData says.
func (l *Lease) SetDataIn(tx *gorm.DB, data string) error {
	if err := l.checkData(data); err != nil {
		return err
	}
	if err := l.Fence(tx); err != nil {
		return err
	}
	ok, err := l.f.writeDataIn(tx, l.sess.id, store.Term{Name: l.name, Epoch: l.epoch}, data)
	if err != nil {
		return fmt.Errorf("coordination: write the data of lease %q epoch %d: %w", l.name, l.epoch, err)
	}
	if !ok {
		return &FenceError{Name: l.name, Epoch: l.epoch, Reason: "the term is over by the database (data not written)"}
	}
	return nil
}

// checkData refuses data the lease cannot carry.
func (l *Lease) checkData(data string) error {
	if poolMemberRow(l.name) {
		return fmt.Errorf("%w: lease %q is a pool membership; its data is the pool protocol's", ErrInvalidConfig, l.name)
	}
	if len(data) > MaxDataLen {
		return fmt.Errorf("%w: data for lease %q is %d bytes; the limit is MaxDataLen (%d)", ErrInvalidConfig, l.name, len(data), MaxDataLen)
	}
	return nil
}
