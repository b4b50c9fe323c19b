import CacheHTTP
import Foundation

/// The servers compared in one run.
enum ServerKind: String, CaseIterable {
    case proxy = "httpcache"
    case nginxDirect = "nginx-direct"
    case nginxSlice = "nginx-slice"
    /// nginx as a plain proxy cache of whole responses (the scale scenario).
    case nginxCache = "nginx-cache"
    /// The reverse-proxy peers (scenarios 15–17): Varnish with malloc storage, Squid with a memory cache.
    case varnish = "varnish"
    case squid = "squid"

    /// Whether it is a cache in front of the origin (and needs warming).
    var caches: Bool { self != .nginxDirect }
}

/// Something the load generator can be pointed at: a server under test or
/// the origin itself (for the "direct from the origin" baselines).
struct Endpoint {
    var name: String
    var port: Int
    /// The processes whose memory and CPU are reported (nginx with several
    /// workers: the master and its workers); empty for the in-process origin.
    var pids: [Int32]
    var path: (_ file: String, _ query: String?) -> String
}

/// A server under test, run as its own process on a loopback port.
final class ServerProcess {
    let kind: ServerKind
    let port: Int
    /// The name its rows get when it is not the only one of its kind (the encrypted proxy).
    var label: String?
    private let process: Process
    private let originBase: String
    /// Worker processes of an nginx master (empty with `master_process off`), Varnish's cache process.
    private let workers: [Int32]
    /// httpcache in front of one origin (`serve --origin`): requests name the origin's paths.
    private let reverse: Bool

    private init(kind: ServerKind, port: Int, process: Process, originBase: String, workers: [Int32] = [],
                 reverse: Bool = false) {
        self.kind = kind
        self.port = port
        self.process = process
        self.originBase = originBase
        self.workers = workers
        self.reverse = reverse
    }

    var pid: Int32 { process.processIdentifier }
    /// Every process of this server: memory and CPU are summed over them.
    var pids: [Int32] { [pid] + workers }
    var isRunning: Bool { process.isRunning }

    /// The request target that fetches `file` (with an optional query making
    /// it a distinct URL, hence a distinct cache entry, of the same bytes).
    func path(for file: String, query: String? = nil) -> String {
        let suffix = query.map { "?" + $0 } ?? ""
        switch kind {
        case .proxy where !reverse:
            return ProxyURL.path(forOrigin: originBase + "/" + file + suffix)!
        case .proxy, .nginxDirect, .nginxSlice, .nginxCache, .varnish, .squid:
            return "/" + file + suffix
        }
    }

    var endpoint: Endpoint {
        Endpoint(name: label ?? kind.rawValue, port: port, pids: pids, path: { [self] in path(for: $0, query: $1) })
    }

    func stop() {
        defer { pids.forEach(Watchdog.shared.untrack) }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)  // an nginx master stops its workers
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            for pid in pids { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
    }

    // MARK: httpcache

    /// `httpcache serve --port 0`: the first stdout line names the port.
    /// `loops` adds `--loops N` (only for a binary that lists it in its help).
    /// `announceTimeout`: seconds it may take to print its first line (a
    /// start with a large cache folder may take long).
    /// `reverse`: `serve --origin originBase` (requests name the origin's paths).
    static func startProxy(binary: String, cacheDirectory: String, logFile: String, originBase: String,
                           loops: Int? = nil, port: Int = 0, extraArguments: [String] = [], reverse: Bool = false,
                           announceTimeout: Double = 20) throws -> ServerProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--port", String(port), "--cache-dir", cacheDirectory, "--log-level", "warning"]
            + (loops.map { ["--loops", String($0)] } ?? []) + (reverse ? ["--origin", originBase] : []) + extraArguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: createFile(logFile)) ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        Watchdog.shared.track(process.processIdentifier)
        let line: String
        do {
            line = try readLine(stdout.fileHandleForReading, timeout: announceTimeout)
        } catch {
            process.terminate()
            throw BenchError("httpcache did not announce its port: \(error)")
        }
        guard line.hasPrefix("listening on http://"), let port = line.split(separator: ":").last.flatMap({ Int($0) }) else {
            process.terminate()
            throw BenchError("unexpected first line from httpcache: \(line)")
        }
        return ServerProcess(kind: .proxy, port: port, process: process, originBase: originBase, reverse: reverse)
    }

    // MARK: Varnish, Squid

    /// A peer that runs in the foreground on a port it is told: started,
    /// waited for until it accepts, its child processes counted with it.
    /// `arguments` gets the port (free a moment ago) and returns the command line.
    static func startPeer(_ kind: ServerKind, binary: String, directory: String, logFile: String,
                          arguments: (Int) throws -> [String]) throws -> ServerProcess {
        var lastError = ""
        for _ in 1...3 {
            let port = try freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = try arguments(port)
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardInput = FileHandle.nullDevice
            let out = FileHandle(forWritingAtPath: createFile(logFile)) ?? FileHandle.nullDevice
            process.standardOutput = out
            process.standardError = out
            try process.run()
            Watchdog.shared.track(process.processIdentifier)
            let deadline = Date().addingTimeInterval(30)
            while process.isRunning && !canConnect(port) && Date() < deadline { usleep(50_000) }
            if process.isRunning && canConnect(port) {
                let children = descendants(of: process.processIdentifier)
                children.forEach(Watchdog.shared.track)
                return ServerProcess(kind: kind, port: port, process: process, originBase: "", workers: children)
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            Watchdog.shared.untrack(process.processIdentifier)
            lastError = String(((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").suffix(600))
        }
        throw BenchError("\(kind.rawValue) did not start: \(lastError)")
    }

    private static func descendants(of pid: Int32) -> [Int32] {
        ProcessStats.children(of: pid).flatMap { [$0] + descendants(of: $0) }
    }

    // MARK: nginx

    /// nginx serving `root` directly or as a slice cache of the origin. One
    /// worker runs as one process (`master_process off`: the master is the
    /// worker); more run under a master, as deployed.
    /// `keysZoneMB` sizes the nginx-cache peer's keys zone.
    static func startNginx(_ kind: ServerKind, binary: String, directory: String, root: String,
                           originPort: Int, sliceSize: String, workers: Int = 1, keysZoneMB: Int = 32) throws -> ServerProcess {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for attempt in 1...5 {
            let port = try freePort()
            let conf = nginxConfig(kind, directory: directory, root: root, port: port, originPort: originPort,
                                   sliceSize: sliceSize, workers: workers, keysZoneMB: keysZoneMB)
            let confPath = directory + "/nginx.conf"
            try conf.write(toFile: confPath, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["-p", directory + "/", "-c", confPath, "-e", directory + "/error.log"]
            process.standardInput = FileHandle.nullDevice
            let out = FileHandle(forWritingAtPath: createFile(directory + "/nginx.out")) ?? FileHandle.nullDevice
            process.standardOutput = out
            process.standardError = out
            try process.run()
            Watchdog.shared.track(process.processIdentifier)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && !canConnect(port) && Date() < deadline { usleep(20_000) }
            if process.isRunning && canConnect(port) {
                guard workers > 1 else { return ServerProcess(kind: kind, port: port, process: process, originBase: "") }
                // The master listens before it forks: wait for every worker. The
                // cache manager and loader (idle housekeeping; the loader exits
                // after a minute) are left out of the figures.
                var children: [Int32] = []
                let forked = Date().addingTimeInterval(10)
                while children.count < workers && Date() < forked {
                    usleep(20_000)
                    children = ProcessStats.children(of: process.processIdentifier).filter {
                        ProcessStats.readText("/proc/\($0)/cmdline")?.contains("worker process") == true
                    }
                }
                children.forEach(Watchdog.shared.track)
                if children.count == workers {
                    return ServerProcess(kind: kind, port: port, process: process, originBase: "", workers: children)
                }
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                throw BenchError("nginx (\(kind.rawValue)) started \(children.count) of \(workers) workers")
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let log = (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? ""
            if !log.contains("Address already in use") || attempt == 5 {
                throw BenchError("nginx (\(kind.rawValue)) did not start: \(log.suffix(500))")
            }
        }
        throw BenchError("nginx did not start")
    }

    private static func nginxConfig(_ kind: ServerKind, directory: String, root: String, port: Int,
                                    originPort: Int, sliceSize: String, workers: Int, keysZoneMB: Int) -> String {
        // The same shape as a small production setup: sendfile, keep-alive
        // for the whole run, no access log (the proxy logs nothing either at
        // warning level). tcp_nopush stays at its default (off): with it on,
        // nginx stalls ~40 ms (a delayed ACK) on every range that does not
        // start on a page boundary, which would make the comparison meaningless.
        let site: String
        switch kind {
        case .nginxDirect:
            site = """
                    root \(root);
                    location / { }
            """
        case .nginxCache:
            // Whole responses under their URI, kept as long as the origin
            // says (max-age), in the same hashed levels as the slice cache.
            site = """
                    location / {
                        proxy_cache scale;
                        proxy_cache_key $uri;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_pass http://origin;
                    }
            """
        case .nginxSlice, .proxy, .varnish, .squid:
            site = """
                    location / {
                        slice \(sliceSize);
                        proxy_cache slice;
                        proxy_cache_key $uri$is_args$args$slice_range;
                        proxy_set_header Range $slice_range;
                        proxy_cache_valid 200 206 1h;
                        proxy_cache_lock on;
                        proxy_cache_lock_timeout 30s;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_pass http://origin;
                    }
            """
        }
        return """
        daemon off;
        master_process \(workers > 1 ? "on" : "off");
        worker_processes \(workers);
        \(workers > 1 && geteuid() == 0 ? "user root;" : "")
        worker_rlimit_nofile 8192;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 4096; }
        http {
            default_type application/octet-stream;
            access_log off;
            sendfile on;
            tcp_nopush off;
            tcp_nodelay on;
            keepalive_timeout 120;
            keepalive_requests 10000000;
            server_tokens off;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy_temp;
            fastcgi_temp_path \(directory)/fastcgi_temp;
            uwsgi_temp_path \(directory)/uwsgi_temp;
            scgi_temp_path \(directory)/scgi_temp;
            proxy_cache_path \(directory)/cache levels=1:2 keys_zone=slice:32m max_size=8g inactive=1h use_temp_path=off;
            proxy_cache_path \(directory)/scale-cache levels=1:2 keys_zone=scale:\(keysZoneMB)m max_size=64g inactive=7d use_temp_path=off;
            upstream origin { server 127.0.0.1:\(originPort); keepalive 64; }
            server {
                listen 127.0.0.1:\(port) backlog=4096;
        \(site)
            }
        }

        """
    }
}

// MARK: helpers

private func createFile(_ path: String) -> String {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    return path
}

/// A port that was free a moment ago (nginx cannot be told to pick one).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else { throw BenchError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func canConnect(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// One line from a pipe, waiting at most `timeout` seconds.
private func readLine(_ handle: FileHandle, timeout: Double) throws -> String {
    var bytes: [UInt8] = []
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 200) > 0 else { continue }
        var byte: UInt8 = 0
        guard read(handle.fileDescriptor, &byte, 1) == 1 else { break }
        if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(byte)
    }
    throw BenchError("no line within \(Int(timeout)) s")
}
