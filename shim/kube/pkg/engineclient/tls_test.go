package engineclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// testCA is a CA made at run time, issuing server and client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue: a leaf certificate (PEM cert, PEM key); server ones carry DNS names / IPs.
func (ca *testCA) issue(t *testing.T, cn string, server bool, names ...string) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeAtomic replaces path (rename), as a careful rotation does.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// clientFiles writes ca's PEM and a client certificate of issuer into dir.
func clientFiles(t *testing.T, dir string, trust *testCA, issuer *testCA, cn string) TLSFiles {
	t.Helper()
	f := TLSFiles{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}
	c, k := issuer.issue(t, cn, false)
	writeAtomic(t, f.CAFile, trust.pem)
	// Key first, then certificate: a handshake in between sees a mismatched pair (kept: the last good).
	writeAtomic(t, f.KeyFile, k)
	writeAtomic(t, f.CertFile, c)
	return f
}

// testServer: a TLS server config requiring client certificates; the CA of its own certificate and
// the CA it trusts for clients can be switched (GetConfigForClient reads them per handshake).
type testServer struct {
	t        *testing.T
	mu       sync.Mutex
	leaf     tls.Certificate
	clientCA *x509.CertPool
}

func (s *testServer) set(serverCA, clientCA *testCA) {
	c, k := serverCA.issue(s.t, "tidal-engine", true, "localhost", "127.0.0.1", "tidal-engine")
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		s.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	s.mu.Lock()
	s.leaf, s.clientCA = pair, pool
	s.mu.Unlock()
}

func serverConfig(t *testing.T, serverCA, clientCA *testCA) (*tls.Config, *testServer) {
	s := &testServer{t: t}
	s.set(serverCA, clientCA)
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: s.clientCA,
			Certificates: []tls.Certificate{s.leaf}, NextProtos: []string{"h2"}}, nil
	}}, s
}

type explainOnly struct {
	tidalv1.UnimplementedEngineServer
}

func (explainOnly) Explain(context.Context, *tidalv1.ExplainRequest) (*tidalv1.ExplainResponse, error) {
	return &tidalv1.ExplainResponse{Text: "over mTLS"}, nil
}

// The engine client over mutual TLS end to end (grpc-go server requiring client certificates).
func TestClientMutualTLS(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	scfg, _ := serverConfig(t, ca, ca)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(scfg)))
	tidalv1.RegisterEngineServer(srv, explainOnly{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	explain := func(files TLSFiles) error {
		c, err := New(Config{Address: lis.Addr().String(), Timeout: 3 * time.Second, TLS: files}, klog.Background())
		if err != nil {
			return err
		}
		defer c.Close()
		resp, err := c.Explain(context.Background(), "ns/x")
		if err == nil && resp.GetText() != "over mTLS" {
			t.Fatalf("unexpected answer %q", resp.GetText())
		}
		return err
	}
	if err := explain(clientFiles(t, t.TempDir(), ca, ca, "tidal-scheduler")); err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	if err := explain(clientFiles(t, t.TempDir(), ca, other, "intruder")); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
	if err := explain(clientFiles(t, t.TempDir(), other, ca, "tidal-scheduler")); err == nil {
		t.Fatal("the client accepted a server certificate its CA did not sign")
	}
	wrongName := clientFiles(t, t.TempDir(), ca, ca, "tidal-scheduler")
	wrongName.ServerName = "not-the-engine.example"
	if err := explain(wrongName); err == nil {
		t.Fatal("the client accepted a server certificate for another name")
	}
	rightName := wrongName
	rightName.ServerName = "tidal-engine"
	if err := explain(rightName); err != nil {
		t.Fatalf("serverName tidal-engine (a SAN): %v", err)
	}
}

// One tls.Config (what the client keeps for its life) picks up rotated files on new handshakes:
// a new client certificate, and a new CA for the server's certificate.
func TestClientTLSConfigReloadsRotatedFiles(t *testing.T) {
	ca, next := newTestCA(t, "ca"), newTestCA(t, "next")
	scfg, server := serverConfig(t, ca, ca)
	lis, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); time.Sleep(50 * time.Millisecond); c.Close() }()
		}
	}()
	dir := t.TempDir()
	files := clientFiles(t, dir, ca, ca, "tidal-scheduler")
	cfg, err := ClientTLSConfig(files, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	handshake := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", lis.Addr().String(), cfg.Clone())
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		// TLS 1.3: a refused client certificate shows on the first read.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !strings.Contains(err.Error(), "EOF") && !isTimeout(err) {
			return nil, err
		}
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	if _, err := handshake(); err != nil {
		t.Fatalf("first handshake: %v", err)
	}
	// The client's certificate rotated to one of another CA: the server refuses it.
	clientFiles(t, dir, ca, next, "tidal-scheduler")
	if _, err := handshake(); err == nil {
		t.Fatal("the rotated client certificate (of a CA the server does not trust) was not used")
	}
	// The server moves to the next CA (its certificate and trusted client CA); the client's files
	// follow. The client must trust the new CA from its file to connect.
	server.set(next, next)
	if _, err := handshake(); err == nil {
		t.Fatal("the client accepted the next CA's server certificate while its CA file named the old CA")
	}
	clientFiles(t, dir, next, next, "tidal-scheduler")
	peer, err := handshake()
	if err != nil {
		t.Fatalf("after both rotations: %v", err)
	}
	if peer.Issuer.CommonName != "next" {
		t.Fatalf("server certificate issued by %q, want next", peer.Issuer.CommonName)
	}
	// A broken rotation (a certificate without its key) keeps the last good files.
	if err := os.WriteFile(files.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(); err != nil {
		t.Fatalf("a bad key file broke new connections instead of keeping the last good pair: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestPlaintextOnlyToLocalEngines(t *testing.T) {
	for _, addr := range []string{"unix:///run/tidal/engine.sock", "127.0.0.1:50051", "localhost:1", "[::1]:1"} {
		if c, err := New(Config{Address: addr}, klog.Background()); err != nil {
			t.Errorf("%s: %v", addr, err)
		} else {
			c.Close()
		}
	}
	for _, addr := range []string{"10.0.0.5:50051", "tidal-engine.tidal-system.svc:50051", "0.0.0.0:1"} {
		_, err := New(Config{Address: addr}, klog.Background())
		if err == nil || !strings.Contains(err.Error(), "engineInsecure") || !strings.Contains(err.Error(), "engineTLS") {
			t.Errorf("%s: plaintext to a network address was not refused clearly: %v", addr, err)
		}
		c, err := New(Config{Address: addr, Insecure: true}, klog.Background())
		if err != nil {
			t.Errorf("%s with Insecure: %v", addr, err)
		} else {
			c.Close()
		}
	}
	if _, err := New(Config{Address: "10.0.0.5:1", TLS: TLSFiles{CAFile: "/x"}}, klog.Background()); err == nil ||
		!strings.Contains(err.Error(), "all three") {
		t.Errorf("incomplete TLS files: %v", err)
	}
	if _, err := New(Config{Address: "10.0.0.5:1", TLS: TLSFiles{CAFile: "/nope/ca", CertFile: "/nope/c", KeyFile: "/nope/k"}},
		klog.Background()); err == nil || !strings.Contains(err.Error(), "engineTLS.caFile") {
		t.Errorf("missing CA file: %v", err)
	}
}
