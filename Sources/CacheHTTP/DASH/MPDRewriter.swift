// Rewriting every URL of an MPD and nothing else: only URL bytes are replaced, so namespaces,
// comments, unknown elements, attribute order and quoting survive byte for byte.

extension DASH {
    /// Each URL carrier (`MPDURLKind`), resolved through the BaseURLs in scope up to
    /// `manifestURL`, goes to `map` with the value as written; the result (XML-escaped)
    /// replaces it, nil keeps it. Not http(s), DTD entities, or not plain character data: kept,
    /// not mapped. A relative URL of segment information above BaseURLs (an AdaptationSet's
    /// SegmentTemplate over Representations with BaseURLs) stays as written: it resolves
    /// against each rewritten BaseURL. Throws, never rewriting partly, on malformed XML, a
    /// root other than `MPD`, or an unusable `manifestURL`.
    package static func rewrite<Bytes: Collection<UInt8>>(
        _ manifest: Bytes, manifestURL: String,
        map: (_ absoluteURL: String, _ written: String, _ kind: MPDURLKind) -> String?
    ) throws(DASHError) -> [UInt8] {
        try manifest.withContiguousBytes { b throws(DASHError) in
            var rewrite = try MPDRewrite(b, manifestURL: manifestURL)
            return try rewrite.run(map)
        }
    }
}

/// Two passes: the first finds which elements have a BaseURL below, the second splices.
private struct MPDRewrite {
    let b: UnsafeBufferPointer<UInt8>
    let root: HLSURIResolver
    typealias Map = (String, String, MPDURLKind) -> String?

    /// An open element; a nil `base` (unusable) means nothing below is rewritten.
    struct Frame {
        var base: HLSURIResolver?
        /// The base from above: what each of its BaseURLs (alternatives) resolves against.
        var inherited: HLSURIResolver?
        var sawBaseURL = false
        var textKind: MPDURLKind?  // a text carrier's kind and text seen so far
        var text: Range<Int>?
        var plainText = true
        var inContentProtection = false
        /// The enclosing (or own) Period, AdaptationSet or Representation has a BaseURL below its
        /// children (first pass).
        var levelBaseBelow = false
    }

    var out: [UInt8] = []
    var copied = 0

    init(_ b: UnsafeBufferPointer<UInt8>, manifestURL: String) throws(DASHError) {
        self.b = b
        do {
            root = try HLSURIResolver(playlistURL: manifestURL)
        } catch {
            throw .invalidManifestURL(manifestURL)
        }
    }

    func elementsAboveBaseURLs() throws(DASHError) -> [Bool] {
        var scanner = XMLScanner(b)
        var flags: [Bool] = []
        var stack: [Int] = []
        while let token = try scanner.next() {
            guard case .start(let name, _, let selfClosing) = token else {
                if case .end = token { stack.removeLast() }
                continue
            }
            // Above it, but not its parent: a template beside this BaseURL resolves against it.
            if scanner.isNamed(name, "BaseURL") { for k in stack.dropLast() { flags[k] = true } }
            flags.append(false)
            if !selfClosing { stack.append(flags.count - 1) }
        }
        return flags
    }

    mutating func run(_ map: Map) throws(DASHError) -> [UInt8] {
        let baseBelow = try elementsAboveBaseURLs()
        var scanner = XMLScanner(b)
        var frames: [Frame] = []
        var ordinal = 0
        out.reserveCapacity(b.count + b.count / 2)
        while let token = try scanner.next() {
            switch token {
            case .start(let name, let attributes, let selfClosing):
                if frames.isEmpty && !scanner.isNamed(name, "MPD") { throw .notMPD }
                let parent = frames.last
                let isBaseURL = scanner.isNamed(name, "BaseURL")
                // A parent's nil base (a BaseURL not understood) stays nil below it.
                let base: HLSURIResolver?
                if let parent { base = isBaseURL ? parent.inherited : parent.base } else { base = root }
                var frame = Frame(base: base, inherited: base)
                frame.inContentProtection = parent?.inContentProtection ?? false
                    || scanner.isNamed(name, "ContentProtection")
                let isLevel = scanner.isNamed(name, "Period") || scanner.isNamed(name, "AdaptationSet")
                    || scanner.isNamed(name, "Representation")
                frame.levelBaseBelow = isLevel ? baseBelow[ordinal] : parent?.levelBaseBelow ?? false
                ordinal += 1
                rewriteAttributes(scanner, name, attributes, frame: frame, map)
                frame.textKind = textKind(scanner, name, inContentProtection: frame.inContentProtection)
                if !selfClosing { frames.append(frame) }
            case .text(let r):
                guard frames.last?.textKind != nil else { continue }
                if frames[frames.count - 1].text != nil { frames[frames.count - 1].plainText = false }
                frames[frames.count - 1].text = r
            case .cdata, .other:
                if !frames.isEmpty { frames[frames.count - 1].plainText = false }
            case .end:
                let frame = frames.removeLast()
                if let kind = frame.textKind, frame.plainText, let r = frame.text {
                    let value = XMLText.trimmed(b, r)
                    let resolved = replace(value, quote: nil, kind: kind, base: frame.base, map)
                    if kind == .baseURL, !frames.isEmpty, !frames[frames.count - 1].sawBaseURL {
                        // The first BaseURL is the one children resolve against (others are alternatives).
                        frames[frames.count - 1].sawBaseURL = true
                        let resolver = resolved.flatMap { try? HLSURIResolver(playlistURL: $0) }
                        frames[frames.count - 1].base = resolver
                    }
                } else if frame.textKind == .baseURL, !frame.plainText, !frames.isEmpty,
                          !frames[frames.count - 1].sawBaseURL {
                    // A BaseURL this cannot read: nothing below it is resolved (nor rewritten).
                    frames[frames.count - 1].sawBaseURL = true
                    frames[frames.count - 1].base = nil
                }
                // Another element inside a carrier: not plain text.
                if !frames.isEmpty, frames[frames.count - 1].textKind != nil { frames[frames.count - 1].plainText = false }
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied...]))
        return out
    }

    private mutating func rewriteAttributes(_ scanner: XMLScanner, _ name: Range<Int>, _ attributes: [XMLAttribute],
                                            frame: Frame, _ map: Map) {
        for a in attributes {
            guard let kind = attributeKind(scanner, element: name, attribute: a.name, frame: frame) else { continue }
            // Segment information above BaseURLs: a relative URL resolves against each, kept.
            if kind.isSegmentInformation, frame.levelBaseBelow, !names(b[a.value]) { continue }
            replace(a.value, quote: b[a.value.lowerBound - 1], kind: kind, base: frame.base, map)
        }
    }

    private func attributeKind(_ scanner: XMLScanner, element: Range<Int>, attribute: Range<Int>,
                               frame: Frame) -> MPDURLKind? {
        let attributeName = UnsafeBufferPointer(rebasing: b[attribute])
        // xlink:href (any prefix bound to XLink: only XLink's href is prefixed in an MPD).
        if scanner.localName(attribute).elementsEqual("href".utf8), attributeName.count > 4 { return .remoteElement }
        let local = scanner.localName(element)
        func named(_ s: String) -> Bool { local.elementsEqual(s.utf8) }
        func attr(_ s: String) -> Bool { attributeName.elementsEqual(s.utf8) }
        if named("SegmentTemplate") {
            if attr("media") { return .mediaTemplate }
            if attr("initialization") { return .initializationTemplate }
            if attr("index") { return .indexTemplate }
            if attr("bitstreamSwitching") { return .bitstreamSwitchingTemplate }
        } else if named("SegmentURL") {
            if attr("media") { return .segment }
            if attr("index") { return .segmentIndex }
        } else if attr("sourceURL") {
            if named("Initialization") { return .initialization }
            if named("RepresentationIndex") { return .representationIndex }
            if named("BitstreamSwitching") { return .bitstreamSwitching }
        } else if named("UTCTiming"), attr("value") {
            return .timing
        } else if frame.inContentProtection, named("laurl"), attr("licenseUrl") {
            return .licence
        }
        return nil
    }

    private func textKind(_ scanner: XMLScanner, _ name: Range<Int>, inContentProtection: Bool) -> MPDURLKind? {
        let local = scanner.localName(name)
        if local.elementsEqual("BaseURL".utf8) { return .baseURL }
        if local.elementsEqual("Location".utf8) { return .location }
        if local.elementsEqual("PatchLocation".utf8) { return .patchLocation }
        if inContentProtection, local.elementsEqual("Laurl".utf8) || local.elementsEqual("laurl".utf8) { return .licence }
        return nil
    }

    private func names(_ value: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        value.starts(with: "//".utf8) || OriginURL.schemeLength(UnsafeBufferPointer(rebasing: value)) != nil
    }

    /// Returns the value's absolute URL, nil when it is not one.
    @discardableResult
    private mutating func replace(_ r: Range<Int>, quote: UInt8?, kind: MPDURLKind, base: HLSURIResolver?,
                                  _ map: Map) -> String? {
        guard let base, let written = XMLText.decode(b[r]), let absolute = base.resolve(written) else { return nil }
        guard let mapped = map(absolute, written, kind), !mapped.isEmpty else { return absolute }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied..<r.lowerBound]))
        out.append(contentsOf: XMLText.escape(mapped, quote: quote))
        copied = r.upperBound
        return absolute
    }
}
