// Package certauthority makes the small X.509 certificate authorities Ferry runs itself
// and signs their leaves: the admission webhooks' serving certificate, `ferry up`'s
// local CA (internal/localca) and the per-start CA of the API server's client
// certificate for the kubelet API (internal/localcluster).
//
// It is a package of its own, and not part of localca, because localca is one of its
// users: the provider of Knative Certificates, with a reconciler and files in the data
// directory; the others want only the certificates. Everything here is crypto/x509 and
// the same for all users: ECDSA P-256 keys, random 127-bit serial numbers, validity
// from an hour before now (a peer whose clock runs a little behind still accepts it),
// PEM with the key as "EC PRIVATE KEY". What differs per user, and stays with it, is
// the subject, the CA's key usages, how long things are valid and where they are kept.
//
// The API server's own serving certificate (internal/localcluster's credentials) is
// made by client-go's certutil with RSA keys and is not made here.
package certauthority
