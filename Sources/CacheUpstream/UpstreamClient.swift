import CacheHTTP
import CacheIO
import Logging

/// HTTP/1.1 client for origins, with a keep-alive pool per origin.
/// Loop thread only.
package final class UpstreamClient {
    private let loop: EventLoop
    package let configuration: UpstreamConfiguration
    private let logger: Logger
    private var idle: [String: [UpstreamConnection]] = [:]
    private var live: [ObjectIdentifier: UpstreamConnection] = [:]
    /// Connections opened so far (for stats and tests).
    package private(set) var connectionsOpened = 0

    package init(loop: EventLoop, configuration: UpstreamConfiguration, logger: Logger) {
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts a GET for `url` with the given extra headers (Range among them).
    package func get(_ url: OriginURL, headers: HTTPHeaders, delegate: UpstreamResponseDelegate) -> UpstreamTask {
        loop.assertInLoop()
        let task = UpstreamTask(url: url, method: "GET", request: Self.requestBytes(url, headers, configuration),
                                delegate: delegate, client: self)
        dispatch(task)
        return task
    }

    static func requestBytes(_ url: OriginURL, _ headers: HTTPHeaders, _ configuration: UpstreamConfiguration) -> [UInt8] {
        var text = "GET \(url.pathAndQuery) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        if !headers.contains("user-agent") { text += "User-Agent: \(configuration.userAgent)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        // Byte offsets must mean the same thing as in the stored file.
        text += "Accept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n"
        return Array(text.utf8)
    }

    private func dispatch(_ task: UpstreamTask) {
        let key = task.url.authorityKey
        while var list = idle[key], let connection = list.popLast() {
            idle[key] = list.isEmpty ? nil : list
            if connection.state == .idle {
                connection.run(task)
                return
            }
        }
        open(for: task)
    }

    private func open(for task: UpstreamTask) {
        let url = task.url
        loop.resolve(host: url.host, port: url.port) { [weak self] result in
            guard let self, !task.isFinished else { return }
            switch result {
            case .failure(let error):
                task.finish(.resolve("\(url.host): \(error)"))
            case .success(let addresses):
                self.connect(task, addresses[...])
            }
        }
    }

    private func connect(_ task: UpstreamTask, _ addresses: ArraySlice<SocketAddress>) {
        guard let address = addresses.first else {
            task.finish(.connect("\(task.url.hostHeader): no address"))
            return
        }
        let connection = UpstreamConnection(poolKey: task.url.authorityKey, label: task.url.hostHeader,
                                            loop: loop, configuration: configuration, client: self)
        live[ObjectIdentifier(connection)] = connection
        connectionsOpened += 1
        task.connection = connection
        pendingAddresses[ObjectIdentifier(connection)] = addresses.dropFirst()
        connection.connect(to: address, for: task)
    }

    private var pendingAddresses: [ObjectIdentifier: ArraySlice<SocketAddress>] = [:]

    /// A connect failed: try the next address, else fail the task.
    func connectionFailed(_ connection: UpstreamConnection, task: UpstreamTask, error: UpstreamError) {
        let rest = pendingAddresses.removeValue(forKey: ObjectIdentifier(connection)) ?? []
        guard !task.isFinished else { return }
        if !rest.isEmpty, !error.isTimeout {
            connect(task, rest)
        } else {
            task.finish(error)
        }
    }

    /// An exchange failed; a reused connection that died before answering is
    /// replaced once by a fresh one (the origin may have closed it while idle).
    func exchangeFailed(_ connection: UpstreamConnection, task: UpstreamTask, error: UpstreamError, retryable: Bool) {
        guard !task.isFinished else { return }
        if retryable && task.mayRetry {
            task.mayRetry = false
            task.connection = nil
            logger.debug("retrying \(task.url.string) on a fresh connection: \(error)")
            open(for: task)
        } else {
            task.finish(error)
        }
    }

    /// Returns a finished connection to the idle pool.
    func release(_ connection: UpstreamConnection) {
        pendingAddresses[ObjectIdentifier(connection)] = nil
        var list = idle[connection.poolKey] ?? []
        if list.count >= configuration.maxIdlePerOrigin {
            connection.close()
            return
        }
        list.append(connection)
        idle[connection.poolKey] = list
    }

    func forget(_ connection: UpstreamConnection) {
        live[ObjectIdentifier(connection)] = nil
        pendingAddresses[ObjectIdentifier(connection)] = nil
        if var list = idle[connection.poolKey], let index = list.firstIndex(where: { $0 === connection }) {
            list.remove(at: index)
            idle[connection.poolKey] = list.isEmpty ? nil : list
        }
    }

    /// Closes every connection (shutdown).
    package func closeAll() {
        for connection in live.values { connection.close() }
        idle.removeAll()
    }
}
