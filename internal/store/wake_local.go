package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// fileDatabase is a database in a file that the processes sharing it open
// on one host (SQLite): they wake each other through sockets next to it.
type fileDatabase interface {
	// sqlDatabaseFile reads the file of the main database, "" for one in
	// memory.
	sqlDatabaseFile() string
}

// localWake wakes the processes that share an SQLite database file: they
// run on one host, and each binds a datagram socket in one directory
// derived from the file's path and the lease table's name. A release
// sends its names to every socket there. A socket whose process died
// refuses the datagram and is removed.
type localWake struct {
	dir string
}

// maxSocketPath is the longest socket path used: sun_path holds 108 bytes
// on Linux and 104 on the BSDs and macOS, the terminating NUL included.
const maxSocketPath = 100

// localSendTimeout bounds one datagram to a peer whose queue is full.
const localSendTimeout = 100 * time.Millisecond

// localWaker returns the store's localWake, reading the database file's
// path from f the first time. A database in memory has no file to share:
// then it returns ErrNoWakeups.
func (s *Store) localWaker(ctx context.Context, f fileDatabase) (*localWake, error) {
	if lw := s.local.Load(); lw != nil {
		return lw, nil
	}
	var files []string
	err := s.run(ctx, s.general, func(db *gorm.DB) (err error) {
		files, err = queryAll(db, stmt{q: f.sqlDatabaseFile()}, func(rs *sql.Rows, f *string) error { return rs.Scan(f) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the database file's path: %w", err)
	}
	file := ""
	if len(files) == 1 {
		file = files[0]
	}
	if file == "" {
		return nil, ErrNoWakeups
	}
	lw := &localWake{dir: localWakeDir(file, wakeChannel(s.tables))}
	s.local.CompareAndSwap(nil, lw)
	return s.local.Load(), nil
}

// localWakeDir is the directory of the sockets for the database file and
// the channel: next to the file, unless a socket's path would be too long
// there, then in the temporary directory under a hash of both. Every
// process computes the same from the same path.
func localWakeDir(file, channel string) string {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	dir := file + "." + channel + ".wake"
	if len(dir)+1+socketNameLen <= maxSocketPath {
		return dir
	}
	sum := sha256.Sum256([]byte(file + "\x00" + channel))
	return filepath.Join(os.TempDir(), "leasehold-wake-"+hex.EncodeToString(sum[:8]))
}

// socketNameLen is the length of a socket's file name: 32 hex digits and
// ".sock".
const socketNameLen = 32 + len(".sock")

// listen binds this process's socket and hands what arrives to wake until
// ctx is done; up is called once the socket is bound.
func (lw *localWake) listen(ctx context.Context, wake WakeFunc, up func()) error {
	if err := os.MkdirAll(lw.dir, 0o755); err != nil {
		return err
	}
	id := uuid.New()
	path := filepath.Join(lw.dir, hex.EncodeToString(id[:])+".sock")
	if len(path) > maxSocketPath {
		return fmt.Errorf("socket path %q is longer than %d bytes", path, maxSocketPath)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer func() {
		_ = conn.Close()
		_ = os.Remove(path)
	}()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	up()
	buf := make([]byte, 64<<10)
	for {
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wake(parseWake(string(buf[:n])))
	}
}

// send wakes every process listening in the directory for names, this
// one included, as PostgreSQL's notifications do.
func (lw *localWake) send(names []string) {
	entries, err := os.ReadDir(lw.dir)
	if err != nil {
		return
	}
	msg := []byte(wakePayload(names))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		peer := filepath.Join(lw.dir, e.Name())
		if err := sendDatagram(peer, msg); errors.Is(err, syscall.ECONNREFUSED) {
			// Nobody is bound to it: its process is gone.
			_ = os.Remove(peer)
		}
	}
}

// sendDatagram sends msg to the socket at path.
func sendDatagram(path string, msg []byte) error {
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetWriteDeadline(time.Now().Add(localSendTimeout))
	_, err = c.Write(msg)
	return err
}
