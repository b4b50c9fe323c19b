extension ProxyServer {
    /// "host:port" this proxy listens on (IPv6 in brackets): the Host of
    /// proxy URLs for a client that sent no Host field.
    var address: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(host):\(port)"
    }
}
