import Foundation
import XCTest

/// Debian's `chromium`, headless, driven over the DevTools protocol (a
/// WebSocket to its page target, spoken here over a plain socket: no node
/// or Python needed at test time). It records console errors and uncaught
/// exceptions of the page.
final class DevToolsBrowser {
    private let process = Process()
    private let profile: TemporaryDirectory
    private let socket: RawHTTPConnection
    private var nextID = 0
    /// Console errors, uncaught exceptions and error log entries seen so far.
    private(set) var errors: [String] = []

    init() throws {
        let chromium = try TestTools.requireTool("chromium")
        let profile = try TemporaryDirectory(prefix: "chromium")
        self.profile = profile
        process.executableURL = URL(fileURLWithPath: chromium)
        process.arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--remote-debugging-port=0", "--user-data-dir=" + profile.path, "about:blank"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The browser writes its DevTools port into the profile once it listens.
        var port = 0
        _ = TestTools.waitUntil(timeout: 30) {
            let text = (try? String(contentsOfFile: profile.path + "/DevToolsActivePort", encoding: .utf8)) ?? ""
            port = Int(text.split(separator: "\n").first ?? "") ?? 0
            return port > 0
        }
        guard port > 0 else {
            process.terminate()
            profile.remove()
            throw TestSupportError("chromium did not start its DevTools server")
        }
        // The page target's WebSocket.
        let list = try RawHTTPConnection(port: port).get("/json/list")
        let targets = (try JSONSerialization.jsonObject(with: Data(list.body)) as? [[String: Any]]) ?? []
        guard let page = targets.first(where: { $0["type"] as? String == "page" }),
              let address = page["webSocketDebuggerUrl"] as? String, let path = URL(string: address)?.path else {
            process.terminate()
            throw TestSupportError("no page target: \(targets)")
        }
        socket = try RawHTTPConnection(port: port, timeout: 30)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let head = try socket.readResponseHead()
        guard head.status == 101 else { throw TestSupportError("WebSocket upgrade answered \(head.status)") }
        _ = try command("Runtime.enable")
        _ = try command("Log.enable")
        _ = try command("Page.enable")
    }

    deinit { close() }

    func close() {
        socket.close()
        if process.isRunning {
            process.terminate()
            if !TestTools.waitForExit(process, timeout: 5) { kill(process.processIdentifier, SIGKILL) }
        }
        profile.remove()
    }

    /// Loads `url` and waits for its load event.
    func navigate(_ url: String) throws {
        _ = try command("Page.navigate", ["url": url])
        _ = try waitForEvent("Page.loadEventFired", timeout: 30)
    }

    /// The value of a JavaScript expression (awaited when it is a promise).
    func evaluate(_ expression: String) throws -> Any? {
        let result = try command("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] { throw TestSupportError("\(expression) threw: \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` (every 50 ms, at most `timeout` s) until it is true.
    func waitFor(_ expression: String, timeout: TimeInterval = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try evaluate(expression) as? Bool == true { return }
            usleep(50_000)
        }
        throw TestSupportError("never true: \(expression)")
    }

    // MARK: the protocol

    private func command(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        let message = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        try sendFrame(Array(message))
        while true {
            let reply = try readMessage()
            if reply["id"] as? Int == id {
                if let error = reply["error"] { throw TestSupportError("\(method): \(error)") }
                return reply["result"] as? [String: Any] ?? [:]
            }
        }
    }

    private func waitForEvent(_ method: String, timeout: TimeInterval) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let message = try readMessage()
            if message["method"] as? String == method { return message }
        }
        throw TestSupportError("no \(method) within \(timeout) s")
    }

    /// The next message; events are noted (errors) on the way.
    private func readMessage() throws -> [String: Any] {
        let payload = try readFrame()
        guard let message = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { return [:] }
        let params = message["params"] as? [String: Any] ?? [:]
        switch message["method"] as? String {
        case "Runtime.exceptionThrown":
            errors.append("exception: \(params["exceptionDetails"] ?? params)")
        case "Runtime.consoleAPICalled" where params["type"] as? String == "error":
            errors.append("console.error: \(params["args"] ?? params)")
        case "Log.entryAdded":
            if let entry = params["entry"] as? [String: Any], entry["level"] as? String == "error" {
                errors.append("log: \(entry["text"] ?? entry) \(entry["url"] ?? "")")
            }
        default:
            break
        }
        return message
    }

    /// A masked text frame (RFC 6455 §5.2: a client always masks).
    private func sendFrame(_ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (UInt64($0) * 8)) & 0xFF) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try socket.send(frame)
    }

    /// One whole message (continuations joined; pings answered).
    private func readFrame() throws -> [UInt8] {
        var message: [UInt8] = []
        while true {
            let head = try socket.readRawBytes(2)
            let opcode = head[0] & 0x0F
            var length = Int(head[1] & 0x7F)
            if length == 126 {
                length = try socket.readRawBytes(2).reduce(0) { $0 << 8 | Int($1) }
            } else if length == 127 {
                length = try socket.readRawBytes(8).reduce(0) { $0 << 8 | Int($1) }
            }
            let payload = length > 0 ? try socket.readRawBytes(length) : []
            switch opcode {
            case 0x8: throw TestSupportError("the browser closed the DevTools connection")
            case 0x9: continue  // ping: the browser does not require the pong on this short session
            case 0xA: continue
            default: message += payload
            }
            if head[0] & 0x80 != 0 { return message }
        }
    }
}
