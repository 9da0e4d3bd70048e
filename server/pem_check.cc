// PEM checks (see pem_check.h).
#include "server/pem_check.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace tidal {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<X509, X509Free> ReadCert(const std::string& path, const std::string& flag, Status* err) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) {
    ERR_clear_error();
    *err = Status::Error(flag + ": cannot read " + path);
    return nullptr;
  }
  std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!cert) *err = Status::Error(flag + ": " + path + " holds no PEM certificate");
  return cert;
}

}  // namespace

Status CheckCertificateFile(const std::string& path, const std::string& flag) {
  Status err = Status::Ok();
  auto cert = ReadCert(path, flag, &err);
  return err;
}

Status CheckCertificatePair(const std::string& cert_path, const std::string& key_path, const std::string& cert_flag,
                            const std::string& key_flag) {
  Status err = Status::Ok();
  auto cert = ReadCert(cert_path, cert_flag, &err);
  if (!cert) return err;
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(key_path.c_str(), "r"));
  if (!bio) {
    ERR_clear_error();
    return Status::Error(key_flag + ": cannot read " + key_path);
  }
  // A callback that gives no passphrase (the default one would prompt on the terminal).
  pem_password_cb* no_passphrase = [](char*, int, int, void*) { return 0; };
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  ERR_clear_error();
  if (!key) return Status::Error(key_flag + ": " + key_path + " holds no PEM private key (or it is encrypted)");
  const int match = X509_check_private_key(cert.get(), key.get());
  ERR_clear_error();
  if (match != 1) return Status::Error(key_flag + ": " + key_path + " does not match the certificate in " + cert_path);
  return Status::Ok();
}

}  // namespace tidal
