package engineclient

// Transport security of the engine connection (docs/security.md).
//
// Without TLS files the connection is plaintext, which New allows only for a unix socket or a
// loopback address (unless Config.Insecure). With CAFile, CertFile and KeyFile it is mutual TLS:
// the engine's certificate must chain to the CA in CAFile and name ServerName (default: the
// address's host; "localhost" for a unix socket), and the client presents CertFile/KeyFile. The
// three files are re-read when they change (checked at every handshake: inode, size, mtime), so a
// rotated certificate or CA is used by the next connection without a restart. A file set that does
// not load (e.g. a key and certificate caught mid-update that do not match) is logged and the last
// good one kept until the files change again.
//
// Threading: the reloader is called from gRPC's dialing goroutines; it is guarded by its own mutex.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
)

// TLSFiles: PEM files for mutual TLS with the engine (all three or none) and the name its
// certificate must carry.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	ServerName                string
}

// Enabled: any of the files is set.
func (t TLSFiles) Enabled() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// IsLoopback: HOST:PORT with HOST localhost or a loopback IP (127.0.0.0/8, ::1).
func IsLoopback(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// transportCredentials for cfg: plaintext (refused for a non-loopback TCP address unless
// cfg.Insecure) or mutual TLS with reloading files. Errors name the plugin arg.
func transportCredentials(cfg Config, logger klog.Logger) (credentials.TransportCredentials, error) {
	if !cfg.TLS.Enabled() {
		if !strings.HasPrefix(cfg.Address, "unix:") && !IsLoopback(cfg.Address) && !cfg.Insecure {
			return nil, fmt.Errorf("engineAddress %q is not a unix socket or a loopback address: set engineTLS "+
				"(caFile, certFile, keyFile) for mutual TLS, or engineInsecure: true to send plaintext gRPC over the network anyway",
				cfg.Address)
		}
		return insecure.NewCredentials(), nil
	}
	tc, err := ClientTLSConfig(cfg.TLS, logger)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(tc), nil
}

// ClientTLSConfig: a tls.Config whose client certificate and trusted CA come from files, re-read
// when they change. Every handshake through it verifies the server's chain against the CA file's
// current contents and the expected name (files.ServerName, else the handshake's server name).
func ClientTLSConfig(files TLSFiles, logger klog.Logger) (*tls.Config, error) {
	switch {
	case files.CAFile == "" || files.CertFile == "" || files.KeyFile == "":
		return nil, errors.New("engineTLS: caFile, certFile and keyFile: give all three or none")
	}
	r := &tlsReloader{files: files, logger: logger}
	if _, _, err := r.current(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: files.ServerName,
		// The chain is verified in VerifyConnection, against the CA file as it is now (tls.Config's
		// RootCAs cannot change after the first handshake); nothing is skipped.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, err := r.current()
			return cert, err
		},
		VerifyConnection: func(cs tls.ConnectionState) error { return r.verify(cs) },
	}, nil
}

type fileStamp struct {
	ino, size uint64
	mtime     time.Time
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path) // follows symlinks: a Secret volume's ..data swap changes the inode
	if err != nil {
		return fileStamp{}, err
	}
	s := fileStamp{size: uint64(st.Size()), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.ino = sys.Ino
	}
	return s, nil
}

type tlsReloader struct {
	files  TLSFiles
	logger klog.Logger

	mu     sync.Mutex
	stamps [3]fileStamp // of CAFile, CertFile, KeyFile when last read
	cert   *tls.Certificate
	roots  *x509.CertPool
}

// current: the client certificate and CA pool, re-read if a file changed since the last read.
func (r *tlsReloader) current() (*tls.Certificate, *x509.CertPool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var now [3]fileStamp
	for i, p := range []string{r.files.CAFile, r.files.CertFile, r.files.KeyFile} {
		s, err := stampOf(p)
		if err != nil {
			return r.keep(fmt.Errorf("engineTLS.%s: %w", [...]string{"caFile", "certFile", "keyFile"}[i], err))
		}
		now[i] = s
	}
	if r.cert != nil && now == r.stamps {
		return r.cert, r.roots, nil
	}
	cert, roots, err := loadTLSFiles(r.files)
	if err != nil {
		return r.keep(err)
	}
	if r.cert != nil {
		r.logger.Info("tidal-engine TLS files reloaded", "cert", r.files.CertFile, "ca", r.files.CAFile)
	}
	r.cert, r.roots, r.stamps = cert, roots, now
	return cert, roots, nil
}

// keep: the last good files after a failed reload (logged), or the error when there are none.
func (r *tlsReloader) keep(err error) (*tls.Certificate, *x509.CertPool, error) {
	if r.cert == nil {
		return nil, nil, err
	}
	r.logger.Error(err, "tidal-engine TLS files not reloaded; keeping the previous ones")
	return r.cert, r.roots, nil
}

func loadTLSFiles(f TLSFiles) (*tls.Certificate, *x509.CertPool, error) {
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("engineTLS.caFile: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("engineTLS.caFile: %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("engineTLS.certFile/keyFile (%s, %s): %w", f.CertFile, f.KeyFile, err)
	}
	return &cert, roots, nil
}

func (r *tlsReloader) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tidal-engine presented no certificate")
	}
	_, roots, err := r.current()
	if err != nil {
		return err
	}
	name := r.files.ServerName
	if name == "" {
		name = cs.ServerName
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tidal-engine's certificate: %w", err)
	}
	return nil
}
