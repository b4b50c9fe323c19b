import CacheHTTP
import CacheLoading
import CacheStorage

/// One response to one request of a cached resource, as a value: the
/// resource's head and body pieces in, socket actions out.
///
/// ```
///  awaitingContent ──content──▶ awaitingBody ──first byte──▶ streaming ──end──▶ done
///        │  (HEAD, 416, empty: head only) ───────────────────────────────────────▲
///        │ failure ──▶ error response ───────────────────────────────────────────┤
///        └─content, buffering transform──▶ collecting ──end──▶ (head + body) ────┘
///  awaitingBody  ──failure──▶ error response (the head was held back for this)
///  streaming     ──failure──▶ aborted (short body, then close: never a wrong byte)
/// ```
///
/// The body stage: without a transform, file pieces become zero-copy
/// `sendFile` actions; with one, the driver reads the pieces into memory
/// (`bytes`) and the transform's output is written instead.
package struct ExchangeStateMachine {
    package enum State {
        case awaitingContent
        /// Planned; the head waits for the first body byte, so an origin that
        /// fails before it still gets the client a clean 502/504.
        case awaitingBody(ResponsePlan, head: [UInt8])
        case streaming(ResponsePlan)
        /// A buffering transform reads the whole body before anything is sent.
        case collecting(ContentInfo)
        case done
    }

    package enum Action {
        /// Ask the reader for these bytes of the stored resource.
        case deliver(Range<Int64>)
        case write([UInt8])
        /// Zero-copy body bytes, after `head` when it is still to go.
        case sendFile(DataFile, Range<Int64>, head: [UInt8]?)
        /// Answer with an error response instead of the resource.
        case respondError(LoadError)
        /// Everything is queued; the connection may take the next request.
        case finish(keepAlive: Bool)
        /// The head is out and the body cannot be completed: what is queued
        /// goes out, then the connection closes.
        case abort(LoadError)
    }

    package private(set) var state: State = .awaitingContent
    private let request: BodyRequest
    private let transform: BodyTransform?
    private var output: [UInt8] = []
    /// What a buffering transform has produced so far.
    private var collected: [UInt8] = []
    /// Where a mapping transform's output has reached (the input offset of
    /// its next output byte); nil before its first input.
    private var outputEnd: Int64?

    package init(request: BodyRequest, transform: BodyTransform?) {
        self.request = request
        self.transform = transform
    }

    package var keepAlive: Bool {
        switch state {
        case .awaitingBody(let plan, _), .streaming(let plan): return plan.keepAlive
        default: return request.keepAlive
        }
    }

    /// The resource's head is known. `date` is the Date field value;
    /// `middle` the head's stored-response lines when rendered before (see
    /// `ResponsePlan.head`).
    package mutating func contentReady(_ stored: ContentInfo, date: String, middle: ResponsePlan.MiddleLines? = nil) -> [Action] {
        guard case .awaitingContent = state else { return [] }
        if transform == nil, let answer = Preconditions.answer(request, info: stored, date: date) {
            // The client's validators match the stored response: 304 or 412, no body.
            state = .done
            return [.write(answer.head), .finish(keepAlive: request.keepAlive)]
        }
        if let transform, transform.buffersWhole {
            state = .collecting(transform.outputInfo(stored))
            return [.deliver(0..<(stored.totalLength ?? Int64.max))]
        }
        let info = transform?.outputInfo(stored) ?? stored
        let plan = ResponsePlan(request, info: info)
        let head = plan.head(info, date: date, middle: transform == nil ? middle : nil)
        guard plan.sendsBody else {
            state = .done
            return [.write(head), .finish(keepAlive: plan.keepAlive)]
        }
        state = .awaitingBody(plan, head: head)
        let input = transform?.inputRange(forOutput: plan.body, totalLength: info.totalLength) ?? plan.body
        return [.deliver(input)]
    }

    package mutating func contentFailed(_ error: LoadError) -> [Action] {
        guard case .awaitingContent = state else { return [] }
        state = .done
        return [.respondError(error), .finish(keepAlive: request.keepAlive)]
    }

    /// Stored bytes ready in the data file (zero-copy path only).
    package mutating func filePiece(_ file: DataFile, _ range: Range<Int64>) -> [Action] {
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
    }

    /// Stored bytes at `offset`, read into memory (a transform runs) or
    /// passed straight through from a download (the disk is full).
    package mutating func bytes(_ input: UnsafeRawBufferPointer, at offset: Int64) -> [Action] {
        if case .collecting = state {
            do { try transform?.process(input, at: offset, into: &collected) } catch {
                return failed(.mismatch("transform: \(error)"))
            }
            return []
        }
        output.removeAll(keepingCapacity: true)
        var produced: Range<Int64>
        if let transform {
            do { try transform.process(input, at: offset, into: &output) } catch {
                return failed(.mismatch("transform: \(error)"))
            }
            // A mapping transform may hold back a partial cipher block, so its
            // output runs on from where the previous output ended.
            let start = outputEnd ?? offset
            produced = start..<(start + Int64(output.count))
            outputEnd = produced.upperBound
        } else {
            output.append(contentsOf: input)
            produced = offset..<(offset + Int64(input.count))
        }
        let plan: ResponsePlan
        var head: [UInt8]?
        switch state {
        case .awaitingBody(let p, let h):
            plan = p
            head = h
            state = .streaming(p)
        case .streaming(let p):
            plan = p
        default:
            return []
        }
        var actions: [Action] = []
        if let h = head { actions.append(.write(h)) }
        return actions + emit(produced, plan)
    }

    /// Writes the part of `output` (covering `produced`) that the plan asked
    /// for: a mapping transform read whole blocks, so the ends are cut back.
    private func emit(_ produced: Range<Int64>, _ plan: ResponsePlan) -> [Action] {
        let wanted = produced.clamped(to: plan.body)
        guard !wanted.isEmpty else { return [] }
        let cut = Array(output[Int(wanted.lowerBound - produced.lowerBound)..<Int(wanted.upperBound - produced.lowerBound)])
        return frame(plan, [.write(cut)], count: cut.count, head: nil)
    }

    /// Every body byte was delivered.
    package mutating func bodyFinished(date: String) -> [Action] {
        switch state {
        case .collecting(let info):
            do { try transform?.finish(into: &collected) } catch {
                state = .awaitingContent
                return contentFailed(.mismatch("transform: \(error)"))
            }
            var out = info
            out.totalLength = Int64(collected.count)
            let plan = ResponsePlan(request, info: out)
            state = .done
            var bytes = plan.head(out, date: date)
            if plan.sendsBody {
                bytes.append(contentsOf: collected[Int(plan.body.lowerBound)..<Int(plan.body.upperBound)])
            }
            collected = []
            return [.write(bytes), .finish(keepAlive: plan.keepAlive)]
        case .awaitingBody(let plan, let head):
            // Only an empty remainder gets here (the plan had a body): send the head.
            state = .done
            return [.write(head)] + (plan.chunked ? [.write(Self.lastChunk)] : []) + [.finish(keepAlive: plan.keepAlive)]
        case .streaming(let plan):
            var actions: [Action] = []
            if let transform, !transform.buffersWhole {
                output.removeAll(keepingCapacity: true)
                do { try transform.finish(into: &output) } catch { return failed(.mismatch("transform: \(error)")) }
                let start = outputEnd ?? plan.body.lowerBound
                actions += emit(start..<(start + Int64(output.count)), plan)
            }
            state = .done
            if plan.chunked { actions.append(.write(Self.lastChunk)) }
            actions.append(.finish(keepAlive: plan.keepAlive))
            return actions
        case .awaitingContent, .done:
            return []
        }
    }

    /// The body could not be completed.
    package mutating func failed(_ error: LoadError) -> [Action] {
        switch state {
        case .awaitingBody, .collecting:
            // Nothing is out yet: the client still gets a clean error response.
            state = .awaitingContent
            return contentFailed(error)
        case .streaming:
            state = .done
            return [.abort(error)]
        case .awaitingContent:
            return contentFailed(error)
        case .done:
            return []
        }
    }

    static let lastChunk = Array("0\r\n\r\n".utf8)

    /// Wraps body actions in chunk framing when the plan is chunked.
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
}
