import Foundation
import XCTest

/// The `/ui/` page in a real browser (headless Chromium over the DevTools
/// protocol): it loads without a console error, says when there are no
/// downloads, adds a download through its form, shows its progress
/// advancing, and its buttons pause and remove it (remove after a
/// confirmation). `GET /` points to it.
final class DownloadPageTests: XCTestCase {
    func testThePageRunsDownloadsInABrowser() throws {
        let directory = try TemporaryDirectory(prefix: "download-page")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 12_000_000, seed: 8, in: www, name: "show.mp4")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "1MB"])
        defer { proxy.terminate() }
        let browser = try DevToolsBrowser()
        defer { browser.close() }

        try browser.navigate("http://127.0.0.1:\(proxy.port)/ui/")
        XCTAssertEqual(try browser.evaluate("document.title") as? String, "HTTPCache")
        // Issue 35: no downloads yet says so, and how to add one.
        try browser.waitFor("""
            !document.getElementById('noDownloads').hidden
              && document.getElementById('noDownloads').textContent.includes('No downloads yet')
              && document.getElementById('noDownloads').textContent.includes('httpcache download add URL')
            """)
        // The variant and seconds fields say what they mean.
        let help = try browser.evaluate("document.getElementById('addHelp').textContent") as? String ?? ""
        XCTAssertTrue(help.contains("highest") && help.contains("bits per second") && help.contains("first this many seconds"),
                      help)
        XCTAssertTrue((try browser.evaluate("document.getElementById('variant').title") as? String ?? "").contains("renditions"))
        XCTAssertTrue((try browser.evaluate("document.getElementById('duration').title") as? String ?? "").contains("seconds"))
        // The add form.
        let url = origin.url("/show.mp4")
        _ = try browser.evaluate("""
            document.getElementById('url').value = '\(url)';
            document.getElementById('name').value = 'Show';
            document.getElementById('addButton').click(); true
            """)
        try browser.waitFor("document.querySelectorAll('#downloads tr.running').length === 1")
        XCTAssertEqual(try browser.evaluate("document.querySelector('#downloads tr td').textContent") as? String, "Show")
        XCTAssertEqual(try browser.evaluate("document.getElementById('noDownloads').hidden") as? Bool, true)
        // Progress advances on the page (from the event stream).
        try browser.waitFor("Number(document.querySelector('#downloads tr').dataset.done) > 0")
        let first = try browser.evaluate("Number(document.querySelector('#downloads tr').dataset.done)") as? Double ?? 0
        try browser.waitFor("Number(document.querySelector('#downloads tr').dataset.done) > \(first) + 500000")
        XCTAssertTrue(try browser.evaluate("parseFloat(document.querySelector('#downloads .bar > div').style.width) > 0") as? Bool == true)

        // Pause through its button: the page and the CLI agree.
        _ = try browser.evaluate("document.querySelector('button[data-action=pause]').click(); true")
        try browser.waitFor("document.querySelectorAll('#downloads tr.paused').length === 1")
        let listed = try TestTools.run(CLITests.binary, ["download", "list", "--cache-dir", folder])
        XCTAssertTrue(listed.stdout.contains(" paused "), listed.stdout)

        // The cache and live counters sections filled in.
        try browser.waitFor("document.getElementById('cacheUse').textContent.includes(' of 500.0 MB')")
        try browser.waitFor("document.getElementById('hitRatio').textContent.endsWith('%')")

        // Remove asks first (issue 35). The page's confirm() and fetch() are
        // watched: declined, no request leaves and the download stays.
        _ = try browser.evaluate("""
            window.asked = []; window.answer = false; window.requested = [];
            window.confirm = question => { window.asked.push(question); return window.answer; };
            const realFetch = window.fetch.bind(window);
            window.fetch = (url, options) => { window.requested.push(String(url)); return realFetch(url, options); };
            document.querySelector('button[data-action=remove]').click(); true
            """)
        XCTAssertEqual(try browser.evaluate("window.asked.length") as? Int, 1)
        XCTAssertTrue((try browser.evaluate("window.asked[0]") as? String ?? "").contains("Remove the download \u{201C}Show\u{201D}?"))
        XCTAssertEqual(try browser.evaluate("window.requested.filter(u => u.includes('/remove')).length") as? Int, 0)
        XCTAssertEqual(try browser.evaluate("document.querySelectorAll('#downloads tr').length") as? Int, 1)
        let kept = try TestTools.run(CLITests.binary, ["download", "list", "--cache-dir", folder])
        XCTAssertTrue(kept.stdout.contains(" paused "), kept.stdout)

        // Accepted: gone from the page, the folder and the cache.
        _ = try browser.evaluate("window.answer = true; document.querySelector('button[data-action=remove]').click(); true")
        XCTAssertEqual(try browser.evaluate("window.asked.length") as? Int, 2)
        try browser.waitFor("document.querySelectorAll('#downloads tr').length === 0")
        try browser.waitFor("!document.getElementById('noDownloads').hidden")
        let after = try TestTools.run(CLITests.binary, ["download", "list", "--cache-dir", folder])
        XCTAssertEqual(after.stdout, "", after.stderr)
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            (try? TestTools.run(CLITests.binary, ["cache", "list", "--cache-dir", folder]).stdout.contains("0 resources")) == true
        })
        XCTAssertEqual(browser.errors, [], "console errors and exceptions of the page")
    }

    /// The page's event stream (`/admin/downloads/events`): every record at
    /// once, an event at each change, and when its client goes the stream
    /// ends at once, not at the next heartbeat.
    func testTheEventStreamSendsChangesAndEndsWithItsClient() throws {
        let directory = try TemporaryDirectory(prefix: "download-events-route")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 4_000_000, seed: 9, in: www, name: "slow.mp4")
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "200KB"])
        defer { proxy.terminate() }
        let added = try TestTools.run(CLITests.binary, ["download", "add", origin.url("/slow.mp4"), "--name", "Slow",
                                                        "--cache-dir", folder])
        XCTAssertTrue(added.succeeded, added.stderr)
        let token = try XCTUnwrap(try String(contentsOfFile: folder + "/lock", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("token ") }).dropFirst(6)

        let stream = try RawHTTPConnection(port: proxy.port)
        try stream.sendRequest(path: "/admin/downloads/events", headers: [("X-HTTPCache-Token", String(token))])
        let head = try stream.readPartialResponse(maxBodyBytes: 1)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Type"), "text/event-stream")
        var text = String(decoding: head.body, as: UTF8.self)
        // The record now, then a change: pausing it.
        while !text.contains("\"name\":\"Slow\"") { text += String(decoding: try stream.readRawBytes(1), as: UTF8.self) }
        XCTAssertTrue(try TestTools.run(CLITests.binary, ["download", "pause", "--cache-dir", folder,
                                                      String(text.split(separator: "\"id\":\"")[1].prefix { $0 != "\"" })]).succeeded)
        while !text.contains("\"state\":\"paused\"") { text += String(decoding: try stream.readRawBytes(1), as: UTF8.self) }
        XCTAssertTrue(text.hasPrefix("event: download\ndata: {"), text)

        // Gone: the stream ends now (its connection closes), not at the next heartbeat 10 s later.
        stream.close()
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) {
            let stats = try? RawHTTPConnection(port: proxy.port).get("/stats")
            return stats.map { String(decoding: $0.body, as: UTF8.self).contains("\"open_connections\":1,") } ?? false
        }, "only the /stats request's own connection is left")
    }

    /// The page is the admin surface's: a rebinding page's Host gets 421, and
    /// its requests without the token get 403.
    func testThePageKeepsTheAdminPolicy() throws {
        let directory = try TemporaryDirectory(prefix: "download-page-policy")
        defer { directory.remove() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path)
        defer { proxy.terminate() }
        let connection = try RawHTTPConnection(port: proxy.port)
        XCTAssertEqual(try connection.get("/ui/", headers: [("Host", "evil.example")]).status, 421)
        let page = try RawHTTPConnection(port: proxy.port).get("/ui/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertNotNil(page.header("Content-Security-Policy"))
        let html = String(decoding: page.body, as: UTF8.self)
        XCTAssertFalse(html.contains("http://") || html.contains("https://") && !html.contains("placeholder=\"https://"),
                       "no external request")
        XCTAssertEqual(try RawHTTPConnection(port: proxy.port).get("/admin/downloads").status, 403)
    }

    /// Issue 35: `GET /` of a proxy-URL proxy redirects to the page and links
    /// it, with the page's security headers and nothing of its token. In
    /// reverse mode `/` stays the origin's and `/_httpcache/` points to
    /// `/_httpcache/ui/`.
    func testTheRootPointsToThePage() throws {
        let directory = try TemporaryDirectory(prefix: "download-page-root")
        defer { directory.remove() }
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder)
        defer { proxy.terminate() }
        let root = try RawHTTPConnection(port: proxy.port).get("/")
        XCTAssertEqual(root.status, 302)
        XCTAssertEqual(root.header("Location"), "/ui/")
        XCTAssertEqual(root.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertEqual(root.header("Content-Security-Policy"), "default-src 'none'")
        XCTAssertEqual(root.header("X-Frame-Options"), "DENY")
        XCTAssertEqual(root.header("Cache-Control"), "no-store")
        XCTAssertTrue(root.bodyString.contains(#"<a href="/ui/">/ui/</a>"#), root.bodyString)
        let lock = try String(contentsOfFile: folder + "/lock", encoding: .utf8)
        let token = String(try XCTUnwrap(lock.split(separator: "\n").first { $0.hasPrefix("token ") }).dropFirst(6))
        XCTAssertFalse(token.isEmpty)
        XCTAssertFalse(root.bodyString.contains(token), "the token stays in the page")
        XCTAssertFalse(root.rawHead.contains(token), "the token stays in the page")
        let head = try RawHTTPConnection(port: proxy.port).request(method: "HEAD", path: "/")
        XCTAssertEqual(head.status, 302)
        XCTAssertEqual(head.header("Location"), "/ui/")
        XCTAssertEqual(head.body, [])
        // The link leads to the page.
        XCTAssertEqual(try RawHTTPConnection(port: proxy.port).get("/ui/").status, 200)
        // A rebinding name gets what it got before: the Host check comes first.
        XCTAssertEqual(try RawHTTPConnection(port: proxy.port).get("/", headers: [("Host", "evil.example")]).status, 421)

        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let index = try TestFile.random(size: 2_000, seed: 35, in: www, name: "index.html")
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let reverse = try ProxyProcess(cacheDirectory: directory.file("reverse").path,
                                       extraArguments: ["--origin", origin.baseURL])
        defer { reverse.terminate() }
        let served = try RawHTTPConnection(port: reverse.port).get("/")
        XCTAssertEqual(served.status, 200)
        XCTAssertBytes(served.body, equal: index)
        let own = try RawHTTPConnection(port: reverse.port).get("/_httpcache/")
        XCTAssertEqual(own.status, 302)
        XCTAssertEqual(own.header("Location"), "/_httpcache/ui/")
        XCTAssertTrue(own.bodyString.contains(#"<a href="/_httpcache/ui/">"#), own.bodyString)
    }
}
