import CacheHTTP
import CacheIO
import CacheLoading
import CacheProxy
import Glibc

// Running the cache as a service: reload (SIGHUP), log rotation (SIGUSR1),
// drain (SIGQUIT), and the signals that ask for them.

extension MediaCache {
    /// Applies what can change while serving (`ServeOption.isReloadable`: size limit, origin request
    /// fields, allowed origins, access log, downloads' parallelism and rate…); others need a restart,
    /// requests in flight keep what they started with. Throws, changing nothing, `.invalidArgument`
    /// for a configuration `validate()` refuses and `.io` when a new access log cannot be opened.
    public func reconfigure(_ configuration: HTTPCacheConfiguration) throws(HTTPCacheError) {
        try configuration.validate()
        var target = ServeSettings(self.configuration)
        let source = ServeSettings(configuration)
        for option in ServeOption.all where option.isReloadable { option.copy(&target, source) }
        let updated = target.configuration
        let proxy = updated.proxyConfiguration
        let servers = serving.withLock { $0.servers }
        // The access log first: the one change that can fail.
        var accessLog: AccessLogWriter?
        if let home = servers.first {
            let made = home.loop.submitAndWait { () -> Result<AccessLogWriter?, HTTPCacheError> in
                do { return .success(try home.value.accessLog(at: proxy.accessLogPath)) } catch {
                    return .failure(HTTPCacheError(.io, "\(error)"))
                }
            }
            accessLog = try made.closedIfNil()
        }
        current.withLock { $0 = updated }
        // Each engine's own configuration (its loop's limits, the host's hooks) with the reloadable options applied.
        _ = engines.submitToAll { engine in
            var live = ProxyConfiguration(engine: engine.configuration)
            for option in ServeOption.all where option.isReloadable { option.apply(source, &live) }
            engine.reconfigure(live.engine)
        }
        let writer = accessLog
        let destinations = proxy.engine.upstream.destinations
        _ = onEveryServer { $0.reconfigure(destinations: destinations, accessLog: writer) }
    }

    /// Log rotation: the access log reopens its path (lines already accepted go to the old file).
    public func reopenLogs() { _ = onEveryServer { $0.reopenLogs() } }

    /// Starts a drain: servers stop listening, `/readyz` and new requests on open connections get
    /// 503, responses in flight go on. `busyConnections` says when they are done; then `close()`.
    public func beginDrain() { _ = onEveryServer { $0.beginDrain() } }

    /// Client connections with a request in flight, over every loop.
    public var busyConnections: Int { onEveryServer { $0.busyConnections }.reduce(0) { $0 + ($1 ?? 0) } }

    /// Runs `body` on every server in turn and waits; answers in loop order (nil: loop stopped).
    private func onEveryServer<T: Sendable>(_ body: @escaping @Sendable (ProxyServer) -> T) -> [T?] {
        serving.withLock { $0.servers }.map { server in server.loop.submitAndWait { body(server.value) } }
    }

    /// Calls `handler` (on a loop thread: it must not wait for the cache) for each of `signals`
    /// received until `close()`; they must not be blocked in every thread. `.io` when one cannot be watched.
    package func watch(signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) throws(HTTPCacheError) {
        let loop = engines.loops[0]
        for signal in signals {
            let made = loop.submitAndWait { () -> LoopBound<SignalWatcher>? in
                SignalWatcher(on: loop, signal: signal) { handler($0) }.map { LoopBound($0, loop: loop) }
            }
            guard let watcher = made ?? nil else { throw HTTPCacheError(.io, "cannot watch signal \(signal)") }
            serving.withLock { $0.signalWatchers.append(watcher) }
        }
    }
}
