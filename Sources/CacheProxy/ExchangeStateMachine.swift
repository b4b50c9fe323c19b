import CacheHTTP
import CacheLoading
import CacheStorage

/// One response to one request of a cached resource, as a value: the body's head and pieces in
/// (from a `BodySource`, already transformed and cut), socket actions out.
///
/// ```
///  awaitingContent ──content──▶ awaitingBody ──first byte──▶ streaming ──end──▶ done
///        │  (HEAD, 416, empty, 304/412: head only) ────────────────────────────▲
///        │ failure ──▶ error response ─────────────────────────────────────────┤
///  awaitingBody  ──failure──▶ error response (the head was held back for this)
///  streaming     ──failure──▶ aborted (short body, then close: never a wrong byte)
/// ```
package struct ExchangeStateMachine {
    package enum State {
        case awaitingContent
        /// The head waits for the first body byte, so an origin failing before it still gets a clean 502/504.
        case awaitingBody(ResponsePlan, head: [UInt8])
        case streaming(ResponsePlan)
        case done
    }

    package enum Event {
        /// `transformed`: the bytes are not the stored ones (no 304 from the stored validators, no
        /// prerendered stored lines). `middle`: the stored head's lines when rendered before.
        case content(ContentInfo, transformed: Bool, date: String, middle: ResponsePlan.MiddleLines? = nil)
        case contentFailed(LoadError)
        /// Stored bytes ready in the data file (zero-copy).
        case file(DataFile, Range<Int64>)
        case bytes([UInt8])
        case bodyEnded
        case failed(LoadError)
    }

    package enum Action {
        case deliver(Range<Int64>)
        case write([UInt8])
        /// The head and a small first piece of the body in one send (one packet, one system call).
        case writeHead([UInt8], body: [UInt8])
        /// Zero-copy body bytes, after `head` when it is still to go.
        case sendFile(DataFile, Range<Int64>, head: [UInt8]?)
        case respondError(LoadError)
        /// Everything is queued; the connection may take the next request.
        case finish(keepAlive: Bool)
        /// The head is out, the body cannot be completed: what is queued goes out, then the socket closes.
        case abort(LoadError)
    }

    package private(set) var state: State = .awaitingContent
    private let request: BodyRequest
    /// The Cache-Status value (RFC 9211) of the response head, set by the driver before `.content`.
    package var cacheStatus: String?

    package init(request: BodyRequest) {
        self.request = request
    }

    package var keepAlive: Bool {
        switch state {
        case .awaitingBody(let plan, _), .streaming(let plan): return plan.keepAlive
        default: return request.keepAlive
        }
    }

    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .content(let info, let transformed, let date, let middle):
            guard case .awaitingContent = state else { return [] }
            return content(info, transformed: transformed, date: date, middle: middle)
        case .contentFailed(let error):
            guard case .awaitingContent = state else { return [] }
            state = .done
            return [.respondError(error), .finish(keepAlive: request.keepAlive)]
        case .file(let file, let range):
            switch state {
            case .awaitingBody(let plan, let head):
                state = .streaming(plan)
                return frame(plan, [.sendFile(file, range, head: plan.chunked ? nil : head)], count: range.count,
                             head: plan.chunked ? head : nil)
            case .streaming(let plan):
                return frame(plan, [.sendFile(file, range, head: nil)], count: range.count, head: nil)
            default:
                return []
            }
        case .bytes(let bytes):
            switch state {
            case .awaitingBody(let plan, let head):
                state = .streaming(plan)
                if !plan.chunked && bytes.count <= Self.sharedPacketMax { return [.writeHead(head, body: bytes)] }
                return [.write(head)] + frame(plan, [.write(bytes)], count: bytes.count, head: nil)
            case .streaming(let plan):
                return frame(plan, [.write(bytes)], count: bytes.count, head: nil)
            default:
                return []
            }
        case .bodyEnded:
            switch state {
            case .awaitingBody(let plan, let head):
                // Only an empty remainder gets here (the plan had a body): send the head.
                state = .done
                return [.write(head)] + (plan.chunked ? [.write(Self.lastChunk)] : []) + [.finish(keepAlive: plan.keepAlive)]
            case .streaming(let plan):
                state = .done
                return (plan.chunked ? [.write(Self.lastChunk)] : []) + [.finish(keepAlive: plan.keepAlive)]
            case .awaitingContent, .done:
                return []
            }
        case .failed(let error):
            switch state {
            case .awaitingBody, .awaitingContent:
                // Nothing is out yet: the client still gets a clean error response.
                state = .done
                return [.respondError(error), .finish(keepAlive: request.keepAlive)]
            case .streaming:
                state = .done
                return [.abort(error)]
            case .done:
                return []
            }
        }
    }

    private mutating func content(_ info: ContentInfo, transformed: Bool, date: String,
                                  middle: ResponsePlan.MiddleLines?) -> [Action] {
        if !transformed, let answer = Preconditions.answer(request, info: info, date: date) {
            // The client's validators match the stored response: 304 or 412, no body.
            state = .done
            let head = cacheStatus.map { CacheStatusField.inserting($0, into: answer.head) } ?? answer.head
            return [.write(head), .finish(keepAlive: request.keepAlive)]
        }
        let plan = ResponsePlan(request, info: info)
        let head = plan.head(info, date: date, cacheStatus: cacheStatus, middle: transformed ? nil : middle)
        guard plan.sendsBody else {
            state = .done
            return [.write(head), .finish(keepAlive: plan.keepAlive)]
        }
        state = .awaitingBody(plan, head: head)
        return [.deliver(plan.body)]
    }

    static let lastChunk = Array("0\r\n\r\n".utf8)

    private func frame(_ plan: ResponsePlan, _ body: [Action], count: Int, head: [UInt8]?) -> [Action] {
        guard plan.chunked else { return body }
        var actions: [Action] = []
        if let head { actions.append(.write(head)) }
        actions.append(.write(Array((String(count, radix: 16) + "\r\n").utf8)))
        actions += body
        actions.append(.write(Self.crlf))
        return actions
    }

    private static let crlf = Array("\r\n".utf8)

    /// Largest first piece sent with the head: inside one loopback segment (see CS_SHARED_PACKET_MAX).
    package static let sharedPacketMax = 32 * 1024
}
