import CacheHTTP
import Glibc

extension OriginURL {
    /// True when the host is an IPv4 or IPv6 address rather than a name: TLS
    /// then checks the certificate's IP addresses and sends no SNI.
    var isIPLiteral: Bool {
        if isIPv6 { return true }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }
}
