package testdb

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// forwarder is a MariaDB pair's forwarding port: it listens on a free port
// on 127.0.0.1 and joins each connection it accepts to a new connection
// to the primary's port. The MySQL driver takes one address, so this is
// how the pair's clients follow a failover, as PostgreSQL's multi-host
// DSN does: switchTo moves it to the promoted server and cuts every
// connection it had forwarded to the old one.
type forwarder struct {
	ln net.Listener

	mu     sync.Mutex
	port   int                   // where new connections go
	conns  map[net.Conn]struct{} // both ends of every forwarded connection
	closed bool
	wg     sync.WaitGroup // the accept loop and the copies
}

// forwardDialTimeout bounds the connection to the primary: a server that
// does not answer fails the client's connection within it.
const forwardDialTimeout = 2 * time.Second

// newForwarder listens on a free port and forwards to port.
func newForwarder(port int) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, port: port, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// addr is the forwarding port's address, host:port.
func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f.mu.Lock()
		port := f.port
		f.mu.Unlock()
		up, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), forwardDialTimeout)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !f.track(c, up) {
			continue
		}
		f.wg.Add(2)
		go f.copy(up, c)
		go f.copy(c, up)
	}
}

// track records a joined pair of connections, unless the forwarder is
// closed, when it closes them and returns false.
func (f *forwarder) track(c, up net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		_ = up.Close()
		return false
	}
	f.conns[c], f.conns[up] = struct{}{}, struct{}{}
	return true
}

// copy copies from src to dst until either end closes, then closes both.
func (f *forwarder) copy(dst, src net.Conn) {
	defer f.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}

// switchTo sends new connections to port and cuts every connection
// forwarded so far.
func (f *forwarder) switchTo(port int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.port = port
	f.cutLocked()
}

func (f *forwarder) cutLocked() {
	for c := range f.conns {
		_ = c.Close()
	}
}

// close stops listening, cuts every connection and waits for its
// goroutines. It may be called more than once.
func (f *forwarder) close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		_ = f.ln.Close()
		f.cutLocked()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
