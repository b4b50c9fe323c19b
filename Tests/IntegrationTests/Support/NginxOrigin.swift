import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificate and key for an HTTPS origin.
struct TLSConfig: Sendable {
    var certificatePath: String
    var keyPath: String

    init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// Makes a self-signed certificate for 127.0.0.1/localhost with openssl
    /// (files `cert.pem` and `key.pem` in `directory`).
    static func selfSigned(in directory: URL, commonName: String = "127.0.0.1") throws -> TLSConfig {
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let result = try TestTools.run("openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=\(commonName)",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ], timeout: 30)
        guard result.succeeded else { throw TestSupportError("openssl req failed: \(result.stderr)") }
        return TLSConfig(certificatePath: cert, keyPath: key)
    }
}

/// One line of the origin's access log (format `hc`, see `NginxOrigin.logFormat`).
struct AccessLogEntry: Sendable, Equatable {
    var status: Int
    /// `$body_bytes_sent`: body bytes actually written to the client.
    var bodyBytes: Int
    /// `$connection`: serial number of the client connection.
    var connection: Int
    /// `$connection_requests`: 1 for the first request on a connection, 2 for the next...
    var connectionRequests: Int
    var method: String
    var uri: String
    /// `Range` request header, nil when absent.
    var range: String?
    /// `If-Range` request header, nil when absent.
    var ifRange: String?
    /// `$request_completion` == "OK": false when the client went away before the response was complete.
    var completed: Bool
}

/// A real nginx serving `root` as the origin on a free 127.0.0.1 port.
///
/// Runs in the foreground (`daemon off; master_process off;` — one process,
/// no user switching, so it works as root and as a normal user). Everything
/// it writes (config, pid, logs, temp paths) lives in its own temp dir.
/// `init` starts it; `stop()` / `start()` restart it on the same port;
/// `deinit` stops it.
final class NginxOrigin {
    static let logFormat =
        #"'$status $body_bytes_sent $connection $connection_requests "$request_method" "$request_uri" "$http_range" "$http_if_range" "$request_completion"'"#

    let root: URL
    let tls: TLSConfig?
    let extraServerConfig: String
    let extraHTTPConfig: String
    /// nginx prefix directory: nginx.conf, nginx.pid, error.log, access.log, temp dirs.
    let prefix: TemporaryDirectory
    private(set) var port: Int
    private let portWasChosen: Bool
    private var process: Process?
    private var everStarted = false

    var scheme: String { tls == nil ? "http" : "https" }
    /// e.g. "http://127.0.0.1:PORT" (no trailing slash).
    var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }
    /// `baseURL` + `path` ("/" is inserted if missing).
    func url(_ path: String) -> String { baseURL + (path.hasPrefix("/") ? path : "/" + path) }

    var configURL: URL { prefix.file("nginx.conf") }
    var accessLogURL: URL { prefix.file("access.log") }
    var errorLogURL: URL { prefix.file("error.log") }
    var isRunning: Bool { process?.isRunning ?? false }
    var pid: Int32? { isRunning ? process?.processIdentifier : nil }

    /// Starts nginx serving `root`.
    /// - Parameters:
    ///   - port: fixed port; nil picks a free one (retrying if it is taken meanwhile).
    ///   - extraServerConfig: raw lines placed inside the `server {}` block,
    ///     e.g. `location = /missing { return 404; }` or `add_header X-A b;`.
    ///   - extraHTTPConfig: raw lines placed inside the `http {}` block.
    ///   - start: false to only prepare (call `start()` later).
    init(root: URL, tls: TLSConfig? = nil, port: Int? = nil, extraServerConfig: String = "",
         extraHTTPConfig: String = "", start: Bool = true) throws {
        self.root = root
        self.tls = tls
        self.extraServerConfig = extraServerConfig
        self.extraHTTPConfig = extraHTTPConfig
        self.prefix = try TemporaryDirectory(prefix: "nginx-origin")
        self.portWasChosen = port != nil
        self.port = try port ?? TestTools.freePort()
        if start { try self.start() }
    }

    deinit {
        stop()
        prefix.remove()
    }

    /// Starts nginx (again) on `port`; waits (≤ `timeout` s) until it accepts connections.
    func start(timeout: TimeInterval = 10) throws {
        if isRunning { return }
        let nginx = try TestTools.requireTool("nginx")
        var attempts = 0
        while true {
            attempts += 1
            try writeConfig()
            let outPath = prefix.file("nginx.stdout").path
            _ = FileManager.default.createFile(atPath: outPath, contents: nil)
            let out = FileHandle(forWritingAtPath: outPath)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: nginx)
            p.arguments = ["-p", prefix.path + "/", "-c", configURL.path, "-e", errorLogURL.path]
            p.standardInput = FileHandle.nullDevice
            p.standardOutput = out ?? FileHandle.nullDevice
            p.standardError = out ?? FileHandle.nullDevice
            try p.run()
            try? out?.close()
            process = p

            let up = TestTools.waitUntil(timeout: timeout) {
                !p.isRunning || TestTools.canConnect(port: port, timeout: 0.5)
            }
            if up && p.isRunning {
                everStarted = true
                return
            }
            stop()
            let log = errorLog() + String(decoding: (try? Data(contentsOf: prefix.file("nginx.stdout"))) ?? Data(),
                                          as: UTF8.self)
            if !portWasChosen && !everStarted && attempts < 5 && log.contains("Address already in use") {
                port = try TestTools.freePort()
                continue
            }
            throw TestSupportError("nginx did not start on port \(port) (\(up ? "exited" : "timeout")):\n\(log)")
        }
    }

    /// Stops nginx and waits for it to exit. `graceful` sends SIGQUIT
    /// (finish in-flight requests), otherwise SIGTERM (fast shutdown).
    /// Falls back to SIGKILL after `timeout` seconds.
    func stop(graceful: Bool = false, timeout: TimeInterval = 10) {
        guard let p = process else { return }
        if p.isRunning {
            kill(p.processIdentifier, graceful ? SIGQUIT : SIGTERM)
            if !TestTools.waitForExit(p, timeout: timeout) {
                kill(p.processIdentifier, SIGKILL)
                _ = TestTools.waitForExit(p, timeout: 5)
            }
        }
        if !p.isRunning { p.waitUntilExit() }
        process = nil
    }

    /// Parsed access log (lines nginx has written so far), `settledAccessLog`'s markers left out.
    func accessLog() -> [AccessLogEntry] {
        loggedRequests().filter { !$0.uri.hasPrefix(Self.markerPath) }
    }

    /// The access log once every request nginx ended before this call is in
    /// it, instead of sleeping: nginx logs a request as it ends, so a marker
    /// request sent now is logged after them.
    func settledAccessLog(timeout: TimeInterval = 5) -> [AccessLogEntry] {
        let marker = Self.markerPath + UUID().uuidString
        _ = try? RawHTTPClient.get(url: url(marker), timeout: timeout)
        TestTools.waitUntil(timeout: timeout) { loggedRequests().contains { $0.uri == marker } }
        return accessLog()
    }

    private static let markerPath = "/settled-marker-"

    private func loggedRequests() -> [AccessLogEntry] {
        guard let data = try? Data(contentsOf: accessLogURL) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            Self.parseLogLine(String($0))
        }
    }

    /// Waits (≤ `timeout` s) until the log has at least `count` entries and
    /// returns them. nginx logs a request after the response is sent, so a
    /// client can see the response before the log line exists.
    func accessLog(waitingFor count: Int, timeout: TimeInterval = 5) -> [AccessLogEntry] {
        var entries: [AccessLogEntry] = []
        TestTools.waitUntil(timeout: timeout) {
            entries = accessLog()
            return entries.count >= count
        }
        return entries
    }

    /// Empties the access log in place (nginx keeps its O_APPEND fd).
    func clearAccessLog() {
        _ = truncate(accessLogURL.path, 0)
    }

    /// Sum of `$body_bytes_sent` over the access log.
    var bodyBytesServed: Int { accessLog().reduce(0) { $0 + $1.bodyBytes } }

    func errorLog() -> String {
        String(decoding: (try? Data(contentsOf: errorLogURL)) ?? Data(), as: UTF8.self)
    }

    // MARK: Internals

    private func writeConfig() throws {
        let p = prefix.path
        func q(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        var tlsLines = ""
        if let tls {
            tlsLines = """
                    ssl_certificate \(q(tls.certificatePath));
                    ssl_certificate_key \(q(tls.keyPath));
                    ssl_protocols TLSv1.2 TLSv1.3;
            """
        }
        let conf = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(q(p + "/nginx.pid"));
        error_log \(q(errorLogURL.path)) info;

        events {
            worker_connections 1024;
        }

        http {
            default_type application/octet-stream;
            types {
                text/html html htm shtml;
                text/plain txt;
                video/mp4 mp4 m4v;
                audio/mp4 m4a;
                video/mp2t ts;
                application/vnd.apple.mpegurl m3u8;
            }
            log_format hc \(Self.logFormat);
            access_log \(q(accessLogURL.path)) hc;
            sendfile on;
            tcp_nopush on;
            keepalive_timeout 65;
            keepalive_requests 10000;
            server_tokens off;
            client_body_temp_path \(q(p + "/client_body_temp"));
            proxy_temp_path \(q(p + "/proxy_temp"));
            fastcgi_temp_path \(q(p + "/fastcgi_temp"));
            uwsgi_temp_path \(q(p + "/uwsgi_temp"));
            scgi_temp_path \(q(p + "/scgi_temp"));
        \(extraHTTPConfig)

            server {
                listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl");
                server_name localhost 127.0.0.1;
                root \(q(root.path));
        \(tlsLines)
        \(extraServerConfig)
            }
        }

        """
        try Data(conf.utf8).write(to: configURL)
    }

    /// Undoes nginx's log escaping: double quote, backslash and non-printable bytes are logged as `\xHH`.
    static func unescape(_ s: String) -> String {
        guard s.contains("\\x") else { return s }
        let bytes = Array(s.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count, bytes[i + 1] == UInt8(ascii: "x"),
               let v = UInt8(String(decoding: bytes[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                out.append(v)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `200 5 3 1 "GET" "/a" "-" "-" "OK"`; nil for anything else.
    static func parseLogLine(_ line: String) -> AccessLogEntry? {
        var tokens: [String] = []
        var current = ""
        var inQuotes = false
        var hadQuotes = false
        for ch in line {
            if inQuotes {
                if ch == "\"" { inQuotes = false } else { current.append(ch) }
            } else if ch == "\"" {
                inQuotes = true
                hadQuotes = true
            } else if ch == " " {
                if !current.isEmpty || hadQuotes { tokens.append(current) }
                current = ""
                hadQuotes = false
            } else {
                current.append(ch)
            }
        }
        if !current.isEmpty || hadQuotes { tokens.append(current) }
        guard tokens.count >= 8, let status = Int(tokens[0]), let bytes = Int(tokens[1]),
              let conn = Int(tokens[2]), let connReqs = Int(tokens[3]) else { return nil }
        func opt(_ s: String) -> String? { s == "-" ? nil : unescape(s) }
        return AccessLogEntry(status: status, bodyBytes: bytes, connection: conn, connectionRequests: connReqs,
                              method: unescape(tokens[4]), uri: unescape(tokens[5]),
                              range: opt(tokens[6]), ifRange: opt(tokens[7]),
                              completed: tokens.count > 8 ? tokens[8] == "OK" : true)
    }
}
