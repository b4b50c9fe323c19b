import Glibc
import HTTPCache
import XCTest

/// The configuration file, reloads and the signal lifecycle of `httpcache
/// serve`, as values (the processes are in IntegrationTests/OperationsTests).
final class ServeConfigTests: XCTestCase {
    func testFileSetsOptionsRepeatedAndQuoted() throws {
        let text = """
            # a comment
              max-cache-size = 20GB\r
            allow-origin = a.example.com
            allow-origin=b.example.com:8080

            header = "X-Token: a # b "
            insecure
            log-level = debug
            """
        let file = try ConfigFile.parse(text, path: "/etc/x.conf")
        XCTAssertEqual(file.settings.map(\.line), [2, 3, 4, 6, 7, 8])
        var settings = ServeSettings(cacheDirectory: "/tmp/c")
        try file.apply(to: &settings)
        XCTAssertEqual(settings.configuration.maxCacheSize, 20_000_000_000)
        XCTAssertEqual(settings.configuration.allowedOrigins, ["a.example.com", "b.example.com:8080"])
        XCTAssertEqual(settings.configuration.extraHeaders.map { "\($0.0)=\($0.1)" }, ["X-Token=a # b "])
        XCTAssertTrue(settings.configuration.insecure)
        XCTAssertEqual(settings.logLevel, .debug)
    }

    func testErrorsNameFileLineAndReason() {
        let rows: [(String, String)] = [
            ("port = 80\nnope = 1\n", "/c.conf:2: unknown option nope"),
            ("\n\nport = 99999", "/c.conf:3: port takes 0 to 65535; got \"99999\""),
            ("port = 1\nport = 2", "/c.conf:2: port is already set on line 1"),
            ("max-cache-size =", "/c.conf:1: max-cache-size needs a value"),
            ("max-cache-size", "/c.conf:1: max-cache-size needs a value"),
            ("just some words", "/c.conf:1: expected NAME = VALUE"),
            ("header = no colon here", "/c.conf:1: header takes 'Name: value'"),
        ]
        for (text, expected) in rows {
            var settings = ServeSettings(cacheDirectory: "/tmp/c")
            do {
                try ConfigFile.parse(text, path: "/c.conf").apply(to: &settings)
                XCTFail("accepted: \(text)")
            } catch {
                XCTAssertEqual(error.code, .invalidArgument)
                XCTAssertTrue(error.message.hasPrefix(expected), "\(error.message) should start with \(expected)")
            }
        }
        XCTAssertThrowsError(try ConfigFile.read(path: "/nonexistent/httpcache.conf")) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .io)
        }
    }

    /// A reload takes the live options from the new settings and keeps the
    /// others, naming those it could not change; an option dropped from the
    /// file goes back to its default.
    func testReloadTakesOnlyTheLiveOptions() throws {
        let base = ServeSettings(cacheDirectory: "/tmp/c")
        var running = base
        try ConfigFile.parse("max-cache-size = 1GB\nport = 8080\nallow-origin = a.example\nlog-level = debug",
                             path: "f").apply(to: &running)
        var reloaded = base
        try ConfigFile.parse("max-cache-size = 2GB\nport = 9090\nallow-origin = b.example\nallow-origin = c.example",
                             path: "f").apply(to: &reloaded)
        let (merged, needRestart) = try running.reloading(reloaded, base: base)
        XCTAssertEqual(merged.configuration.maxCacheSize, 2_000_000_000)
        XCTAssertEqual(merged.configuration.allowedOrigins, ["b.example", "c.example"])
        XCTAssertEqual(merged.configuration.port, 8080)
        XCTAssertEqual(merged.logLevel, base.logLevel)
        XCTAssertEqual(needRestart, ["port"])
    }

    func testLifecycle() {
        var life = ServeLifecycle(drainTimeout: 30)
        XCTAssertEqual(life.received(SIGHUP, now: 0), [.reload])
        XCTAssertEqual(life.received(SIGUSR1, now: 0), [.reopenLogs])
        XCTAssertEqual(life.tick(now: 1, busy: 0), [], "ticks mean nothing while serving")
        XCTAssertEqual(life.received(SIGQUIT, now: 10), [.beginDrain])
        XCTAssertEqual(life.state, .draining(deadline: 40))
        XCTAssertEqual(life.received(SIGHUP, now: 11), [], "no reload while draining")
        XCTAssertEqual(life.received(SIGQUIT, now: 11), [])
        XCTAssertEqual(life.received(SIGUSR1, now: 11), [.reopenLogs])
        XCTAssertEqual(life.tick(now: 12, busy: 2), [])
        XCTAssertEqual(life.tick(now: 13, busy: 0), [.stop(drained: true)])
        XCTAssertEqual(life.state, .stopped)
        XCTAssertEqual(life.received(SIGTERM, now: 14), [])

        var timedOut = ServeLifecycle(drainTimeout: 5)
        _ = timedOut.received(SIGQUIT, now: 0)
        XCTAssertEqual(timedOut.tick(now: 5, busy: 1), [.stop(drained: false)])

        var terminated = ServeLifecycle(drainTimeout: 5)
        _ = terminated.received(SIGQUIT, now: 0)
        XCTAssertEqual(terminated.received(SIGTERM, now: 1), [.stop(drained: false)], "SIGTERM ends a drain at once")
        var interrupted = ServeLifecycle(drainTimeout: 5)
        XCTAssertEqual(interrupted.received(SIGINT, now: 0), [.stop(drained: true)])
    }
}
