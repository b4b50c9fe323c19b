import CacheIO
import CacheStorage
import CacheUpstream
import Glibc

// The one mapping of storage and load failures onto `HTTPCacheError` codes:
// the Swift and C APIs, the preloads and the admin routes all use it.

extension HTTPCacheError {
    /// A storage failure: a locked folder is `busy`, a missing file `notFound`, the rest `io`.
    package init(_ error: StorageError) {
        switch error.code {
        case EWOULDBLOCK?, EBUSY?: self.init(.busy, error.description)
        case ENOENT?: self.init(.notFound, error.description)
        case ERANGE?: self.init(.range, error.description)
        case EINVAL?: self.init(.invalidArgument, error.description)  // e.g. importing what is not a regular file
        case ENOKEY?, EKEYREJECTED?: self.init(.key, error.description)  // see FolderKeys.open
        default: self.init(.io, error.description)
        }
    }

    /// A load failure, with the code the proxy logs it under.
    package init(_ error: LoadError) {
        switch error {
        case .originStatus(let status, _, _):
            // As `Code.notFound` says (and as preloads report it): 404 and 410 are "not found".
            self.init(status == 404 || status == 410 ? .notFound : .upstream, "origin answered \(status)")
        case .upstream(let upstream):
            switch upstream {
            case .timeout: self.init(.timedOut, upstream.description)
            case .tls: self.init(.tls, upstream.description)
            case .configuration, .forbidden: self.init(.invalidArgument, upstream.description)
            default: self.init(.upstream, upstream.description)
            }
        case .storage(let reason): self.init(.io, reason)
        case .decryption(let reason): self.init(.invalidArgument, reason)
        case .mismatch, .changed: self.init(.upstream, error.description)
        case .notCached: self.init(.notFound, error.description)
        }
    }
}
