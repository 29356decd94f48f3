package wake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// Socket wakes the processes that share an SQLite database file: they run
// on one host, and each binds a datagram socket in one directory derived
// from the file's path and the tables' channel. A release sends its names
// to every socket there. A socket whose process died refuses the datagram
// and is removed.
type Socket struct {
	db Database
	// dir is the directory of the sockets once the database file's path
	// has been read, by the first Listen or the first send, whichever
	// comes first; "" for a database in memory, which has none.
	dir atomic.Pointer[string]
}

// NewSocket returns the socket transport of db's file. It does no I/O:
// the file's path is read by the first Listen or send. The releases of db
// are sent through it from then on.
func NewSocket(db Database) *Socket {
	s := &Socket{db: db}
	db.OnRelease(func(names []string) {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		s.send(ctx, names)
	})
	return s
}

// maxSocketPath is the longest socket path used: sun_path holds 108 bytes
// on Linux and 104 on the BSDs and macOS, the terminating NUL included.
const maxSocketPath = 100

// localSendTimeout bounds one datagram to a peer whose queue is full.
const localSendTimeout = 100 * time.Millisecond

// directory returns the directory of the sockets, reading the database
// file's path the first time. A database in memory has no file to share:
// then it returns ErrNoWakeups. Failing to read the path is Final.
func (s *Socket) directory(ctx context.Context) (string, error) {
	dir := s.dir.Load()
	if dir == nil {
		file, err := s.db.File(ctx)
		if err != nil {
			return "", Final(fmt.Errorf("read the database file's path: %w", err))
		}
		var d string
		if file != "" {
			d = socketDir(file, s.db.Channel())
		}
		s.dir.CompareAndSwap(nil, &d)
		dir = s.dir.Load()
	}
	if *dir == "" {
		return "", ErrNoWakeups
	}
	return *dir, nil
}

// socketDir is the directory of the sockets for the database file and
// the channel: next to the file, unless a socket's path would be too long
// there, then in the temporary directory under a hash of both. Every
// process computes the same from the same path.
func socketDir(file, channel string) string {
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

// Listen binds this process's socket and hands what arrives to deliver
// until ctx is done; up is called once the socket is bound.
func (s *Socket) Listen(ctx context.Context, deliver func(names []string), up func()) error {
	dir, err := s.directory(ctx)
	if err != nil {
		return err
	}
	id := uuid.New()
	path := filepath.Join(dir, hex.EncodeToString(id[:])+".sock")
	if len(path) > maxSocketPath {
		return fmt.Errorf("socket path %q is longer than %d bytes", path, maxSocketPath)
	}
	var conn *net.UnixConn
	for attempt := 1; ; attempt++ {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		// The last process to stop listening removes the directory,
		// which may fall between the two: make it again, once.
		if err == nil || attempt == 2 || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		_ = conn.Close()
		_ = os.Remove(path)
		// The directory goes with the last socket: it is not empty, and
		// stays, while another process listens in it.
		_ = os.Remove(dir)
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
		deliver(Names(string(buf[:n])))
	}
}

// Notify wakes every process listening in the directory for names, this
// one included, as PostgreSQL's notifications do. It does not wait for
// this process's Listen: a member that joins a pool as soon as its
// coordinator is ready announces its generation before the listening has
// started, and the others must hear of it then, not at their next poll.
func (s *Socket) Notify(ctx context.Context, names []string) error {
	s.send(ctx, names)
	return nil
}

// send is Notify. The first send before any Listen reads the database
// file's path; where that fails, or the database is in memory, it sends
// nothing.
func (s *Socket) send(ctx context.Context, names []string) {
	dir, err := s.directory(ctx)
	if err != nil {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	msg := []byte(Payload(names))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		peer := filepath.Join(dir, e.Name())
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
