package coordination

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/store"
)

// MaxDataLen is the longest data, in bytes, a lease row carries
// (Lease.SetData): 60 KiB, within the 64 KiB of MySQL's TEXT column.
const MaxDataLen = 60 << 10

// An election's lease row carries data of its holders', kept across terms
// and written only under a term, so a paused or partitioned ex-holder can
// never overwrite what a newer term wrote.

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

// SetData writes data into the lease row while this term holds the lease
// (same session and epoch, unexpired by the database clock); otherwise it
// writes nothing and returns an error wrapping ErrFenced. Data longer than
// MaxDataLen, or for a pool membership, is refused with ErrInvalidConfig.
func (l *Lease) SetData(ctx context.Context, data string) error {
	if err := l.checkData(data); err != nil {
		return err
	}
	if !l.Valid() {
		return fenced(fmt.Sprintf("lease %q epoch %d", l.name, l.epoch), "this process no longer trusts the term ("+l.Check().Error()+")")
	}
	ok, err := l.f.writeData(ctx, l.sess.id, store.Term{Name: l.name, Epoch: l.epoch}, data)
	if err != nil {
		return fmt.Errorf("coordination: write the data of lease %q epoch %d: %w", l.name, l.epoch, err)
	}
	if !ok {
		return fenced(fmt.Sprintf("lease %q epoch %d", l.name, l.epoch), "the term is over by the database (data not written)")
	}
	return nil
}

// SetDataIn is SetData inside the caller's transaction tx, after Fence's
// check: the data commits with tx or not at all, and only under this term.
// Its errors are Fence's and SetData's; on one the caller must roll back.
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
		return fenced(fmt.Sprintf("lease %q epoch %d", l.name, l.epoch), "the term is over by the database (data not written)")
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
