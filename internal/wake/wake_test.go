package wake

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"One", []string{"global/a"}, []string{"global/a"}},
		{"Several", []string{"global/a", "eu/b", "pool|global/orders|generation"}, []string{"global/a", "eu/b", "pool|global/orders|generation"}},
		{"NoneMeansAny", nil, nil},
		{"TooLongMeansAny", []string{strings.Repeat("x", MaxPayload/2), strings.Repeat("y", MaxPayload/2)}, nil},
		{"JustFits", []string{strings.Repeat("x", MaxPayload)}, []string{strings.Repeat("x", MaxPayload)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Payload(tc.names)
			if len(p) > MaxPayload {
				t.Fatalf("payload of %d bytes, more than %d", len(p), MaxPayload)
			}
			if got := Names(p); !slices.Equal(got, tc.want) {
				t.Fatalf("Names(Payload(%d names)) = %d names, want %d", len(tc.names), len(got), len(tc.want))
			}
		})
	}
}

func TestFinal(t *testing.T) {
	cause := errors.New("refused")
	err := Final(cause)
	if !IsFinal(err) || !errors.Is(err, cause) || err.Error() != "refused" {
		t.Fatalf("Final(%v) = %v: final %v, wraps the cause %v", cause, err, IsFinal(err), errors.Is(err, cause))
	}
	if IsFinal(cause) || IsFinal(nil) {
		t.Fatal("an unmarked error is final")
	}
}

// fileDB is the store's side of an SQLite database in file.
type fileDB struct {
	file     string
	err      error
	released func(names []string)
}

func (d *fileDB) Means() Means                         { return Sockets }
func (d *fileDB) Channel() string                      { return "leasehold_leases" }
func (d *fileDB) File(context.Context) (string, error) { return d.file, d.err }
func (d *fileDB) Notify(context.Context, []string) error {
	return errors.New("not through the database")
}
func (d *fileDB) Listen(context.Context, func(Conn) error) error { return ErrNoWakeups }
func (d *fileDB) OnRelease(fn func(names []string))              { d.released = fn }

func TestSocketDeliversReleasesAndNotifications(t *testing.T) {
	db := &fileDB{file: filepath.Join(t.TempDir(), "db.sqlite")}
	s := NewSocket(db)
	if db.released == nil {
		t.Fatal("NewSocket did not ask for the releases")
	}
	db.released([]string{"global/early"}) // before Listen: no socket is bound to receive it
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []string, 4)
	up := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func(names []string) { got <- names }, func() { close(up) }) }()
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("the socket was not bound within 10s")
	}
	db.released([]string{"global/a", "global/b"})
	if err := s.Notify(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{{"global/a", "global/b"}, nil} {
		select {
		case names := <-got:
			if !slices.Equal(names, want) {
				t.Fatalf("delivered %q, want %q", names, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q not delivered within 10s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Listen after cancel: %v", err)
	}
	if entries, err := os.ReadDir(socketDir(db.file, db.Channel())); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket directory is left after the only Listen returned: %v, %v", entries, err)
	}
}

// TestSocketDirectoryGoesWithTheLastListener: the directory of the
// sockets, also the one in the temporary directory that a long path
// falls back to, stays while a process listens in it and goes with the
// last one.
func TestSocketDirectoryGoesWithTheLastListener(t *testing.T) {
	// t.TempDir's paths name the test, too long for a socket's.
	short, err := os.MkdirTemp("", "lhw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(short) })
	long := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath), "db.sqlite")
	for name, file := range map[string]string{"NextToTheFile": filepath.Join(short, "db.sqlite"), "InTheTemporaryDirectory": long} {
		t.Run(name, func(t *testing.T) {
			dir := socketDir(file, (&fileDB{}).Channel())
			want := filepath.Dir(file)
			if name == "InTheTemporaryDirectory" {
				want = os.TempDir()
			}
			if filepath.Dir(dir) != want {
				t.Fatalf("the sockets of %s are in %s, want a directory in %s", file, dir, want)
			}
			listen := func() (got chan []string, stop func()) {
				ctx, cancel := context.WithCancel(context.Background())
				got = make(chan []string, 4)
				up, done := make(chan struct{}), make(chan error, 1)
				go func() {
					done <- NewSocket(&fileDB{file: file}).Listen(ctx, func(names []string) { got <- names }, func() { close(up) })
				}()
				select {
				case <-up:
				case err := <-done:
					t.Fatalf("Listen: %v", err)
				case <-time.After(10 * time.Second):
					t.Fatal("the socket was not bound within 10s")
				}
				return got, func() {
					cancel()
					if err := <-done; err != nil {
						t.Fatalf("Listen after cancel: %v", err)
					}
				}
			}
			_, stopA := listen()
			gotB, stopB := listen()
			stopA()
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("the directory went while another process listens in it: %v", err)
			}
			if err := NewSocket(&fileDB{file: file}).Notify(context.Background(), []string{"global/x"}); err != nil {
				t.Fatal(err)
			}
			select {
			case names := <-gotB:
				if !slices.Equal(names, []string{"global/x"}) {
					t.Fatalf("delivered %q", names)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the remaining listener was not woken within 10s")
			}
			stopB()
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the directory %s is left after the last Listen returned: %v", dir, err)
			}
		})
	}
}

// TestSocketNotifiesBeforeListen: a process whose Listen has not started
// yet (a coordinator that has just become ready, whose pool member joins
// and publishes at once) still wakes the processes that listen, with its
// notifications and its releases alike.
func TestSocketNotifiesBeforeListen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "db.sqlite")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan []string, 4)
	up := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- NewSocket(&fileDB{file: file}).Listen(ctx, func(names []string) { got <- names }, func() { close(up) })
	}()
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("the listening socket was not bound within 10s")
	}
	senderDB := &fileDB{file: file}
	sender := NewSocket(senderDB) // never listens
	if err := sender.Notify(ctx, []string{"pool|global/p|member|j"}); err != nil {
		t.Fatal(err)
	}
	senderDB.released([]string{"global/a"})
	for _, want := range [][]string{{"pool|global/p|member|j"}, {"global/a"}} {
		select {
		case names := <-got:
			if !slices.Equal(names, want) {
				t.Fatalf("delivered %q, want %q", names, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q, sent before the sender's Listen, not delivered within 10s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Listen after cancel: %v", err)
	}
	// A database in memory has no directory: sending does nothing, and
	// asks for the file's path once.
	mem := &countingDB{}
	s := NewSocket(mem)
	for range 3 {
		if err := s.Notify(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if mem.files != 1 {
		t.Fatalf("the path of a database in memory was read %d times by 3 sends, want once", mem.files)
	}
}

// countingDB is a database in memory that counts the reads of its path.
type countingDB struct {
	fileDB
	files int
}

func (d *countingDB) File(context.Context) (string, error) { d.files++; return "", nil }

func TestSocketWithoutFile(t *testing.T) {
	ctx := context.Background()
	noop := func([]string) {}
	if err := NewSocket(&fileDB{}).Listen(ctx, noop, func() {}); !errors.Is(err, ErrNoWakeups) {
		t.Fatalf("Listen on a database in memory: %v, want ErrNoWakeups", err)
	}
	if err := NewSocket(&fileDB{err: errors.New("refused")}).Listen(ctx, noop, func() {}); !IsFinal(err) {
		t.Fatalf("Listen when the file's path cannot be read: %v, want a final error", err)
	}
}
