/// An element tree for reading an MPD's values (the rewriter works on byte ranges): local
/// element names, attribute names as written, values decoded.
struct XMLElement {
    var name: String
    var attributes: [String: String] = [:]
    var children: [XMLElement] = []
    var text = ""

    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    func children(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    subscript(_ attribute: String) -> String? { attributes[attribute] }

    static func parse(_ b: UnsafeBufferPointer<UInt8>) throws(DASHError) -> XMLElement {
        var scanner = XMLScanner(b)
        var stack: [XMLElement] = []
        var root: XMLElement?
        func close(_ element: XMLElement) {
            if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
        }
        while let token = try scanner.next() {
            switch token {
            case .start(let name, let attributes, let selfClosing):
                var element = XMLElement(name: String(decoding: scanner.localName(name), as: UTF8.self))
                for a in attributes {
                    element.attributes[String(decoding: b[a.name], as: UTF8.self)] = XMLText.decode(b[a.value])
                }
                if selfClosing { close(element) } else { stack.append(element) }
            case .end:
                close(stack.removeLast())
            case .text(let r):
                if !stack.isEmpty { stack[stack.count - 1].text += XMLText.decode(b[r]) ?? "" }
            case .cdata(let r):
                if !stack.isEmpty { stack[stack.count - 1].text += String(decoding: b[r], as: UTF8.self) }
            case .other:
                continue
            }
        }
        guard let root else { throw .malformedXML(offset: 0, problem: "no root element") }
        return root
    }
}
