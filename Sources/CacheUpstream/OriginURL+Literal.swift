import CacheHTTP
import Glibc

extension OriginURL {
    /// The host is an IP address, not a name: TLS then checks the certificate's IPs and sends no SNI.
    var isIPLiteral: Bool {
        if isIPv6 { return true }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }
}
