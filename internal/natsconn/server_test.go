package natsconn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// startServer starts a nats-server on 127.0.0.1 configured by tune (port
// given, or random with port 0) and stops it at the end of the test. It
// waits up to a minute for the server to accept connections (a loaded
// machine running -race tests can be slow), and when it does not, fails
// with what the server logged (a port taken by another process, say).
func startServer(t *testing.T, port int, tune func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: port, NoSigs: true}
	if port == 0 {
		o.Port = server.RANDOM_PORT
	}
	if tune != nil {
		tune(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	var log errLog
	s.SetLogger(&log, false, false)
	s.Start()
	if !s.ReadyForConnections(time.Minute) {
		s.Shutdown()
		t.Fatalf("nats-server on port %d not ready for connections after a minute; it logged:\n%s", port, log.String())
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// errLog keeps a server's warnings, errors and fatal errors.
type errLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errLog) add(level, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, v...))
}

func (l *errLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *errLog) Noticef(string, ...any)         {}
func (l *errLog) Debugf(string, ...any)          {}
func (l *errLog) Tracef(string, ...any)          {}
func (l *errLog) Warnf(format string, v ...any)  { l.add("[WRN]", format, v...) }
func (l *errLog) Errorf(format string, v ...any) { l.add("[ERR]", format, v...) }
func (l *errLog) Fatalf(format string, v ...any) { l.add("[FTL]", format, v...) }

// freePort returns a port nothing listens on right now, chosen at random
// below the kernel's ephemeral range (Linux: 32768–60999): a test that
// stops and starts a server on one port leaves it free for a moment, and
// a port of the ephemeral range can be taken meanwhile by any other
// process's outgoing connection or ":0" listener (a busy machine running
// other tests), which made the server's restart fail ("nats-server not
// ready").
func freePort(t *testing.T) int {
	t.Helper()
	for range 200 {
		p := 20000 + mrand.IntN(12000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port between 20000 and 32000")
	return 0
}

// writeFile writes data to name under dir and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pki is a test CA with a server certificate for 127.0.0.1 and a client
// certificate, all written as PEM files.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	OtherCA                                          string // a CA that signed nothing here
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caPEM := selfSigned(t, "skillbus test CA")
	_, _, otherPEM := selfSigned(t, "unrelated CA")
	leaf := func(name string, usage x509.ExtKeyUsage, ip bool) (certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if ip {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, name+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			writeFile(t, dir, name+"-key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	}
	p := pki{CA: writeFile(t, dir, "ca.pem", caPEM), OtherCA: writeFile(t, dir, "other-ca.pem", otherPEM)}
	p.ServerCert, p.ServerKey = leaf("server", x509.ExtKeyUsageServerAuth, true)
	p.ClientCert, p.ClientKey = leaf("client", x509.ExtKeyUsageClientAuth, false)
	return p
}

func selfSigned(t *testing.T, cn string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// tlsServer returns a tune function for a server that requires TLS with
// client certificates signed by p's CA.
func tlsServer(t *testing.T, p pki) func(*server.Options) {
	return func(o *server.Options) {
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.ServerCert, KeyFile: p.ServerKey, CaFile: p.CA, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		o.TLSConfig, o.TLS, o.TLSVerify, o.TLSTimeout = cfg, true, true, 2
	}
}

// nkeyUser creates a user nkey, writes its seed file and returns the seed
// file and a tune function for a server that knows only that user.
func nkeyUser(t *testing.T) (seedFile string, tune func(*server.Options)) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	return writeFile(t, t.TempDir(), "user.nk", seed), func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}
}

// operatorSetup creates an operator, an account and a user (JWT mode),
// writes the user's creds file and returns it with a tune function for a
// server trusting the operator with the account preloaded.
func operatorSetup(t *testing.T) (credsFile string, tune func(*server.Options)) {
	t.Helper()
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	ojwt, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ajwt, err := ac.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	uc := jwt.NewUserClaims(upub)
	uc.IssuerAccount = apub
	ujwt, err := uc.Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(ujwt, useed)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "user.creds", creds), func(o *server.Options) {
		opc, err := jwt.DecodeOperatorClaims(ojwt)
		if err != nil {
			t.Fatal(err)
		}
		res := &server.MemAccResolver{}
		if err := res.Store(apub, ajwt); err != nil {
			t.Fatal(err)
		}
		o.TrustedOperators, o.AccountResolver = []*jwt.OperatorClaims{opc}, res
	}
}
