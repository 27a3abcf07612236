import EchoRelayCore
import Foundation

/// Lists come a page at a time (`limit`, `cursor`, `next_cursor`); `--all` follows the
/// cursor to the end.
struct Pages {
    let answers: [APIAnswer]
    /// The cursor of the page after the last one fetched; nil when there is none.
    let nextCursor: String?

    private struct Cursor: Decodable {
        let next_cursor: String?
    }

    static func fetch(
        _ api: APIClient, _ path: [String], query: [(String, String)], cursor: String?, all: Bool
    ) async throws(ClientError) -> Pages {
        var answers: [APIAnswer] = []
        var cursor = cursor
        var seen: Set<String> = []
        repeat {
            let answer = try await api.get(path, query: query + (cursor.map { [("cursor", $0)] } ?? []))
            answers.append(answer)
            cursor = try answer.decode(Cursor.self).next_cursor
            // A cursor that comes back twice would loop forever.
            if let next = cursor, !seen.insert(next).inserted {
                throw ClientError("the server returned the cursor \"\(next)\" twice; stopping")
            }
        } while all && cursor != nil
        return Pages(answers: answers, nextCursor: cursor)
    }

    /// The items of every page, decoded.
    func items<Page: Decodable, Item>(_ page: Page.Type, _ list: (Page) -> [Item]) throws(ClientError) -> [Item] {
        var items: [Item] = []
        for answer in answers { items += list(try answer.decode(page)) }
        return items
    }

    /// What `--json` prints: one page exactly as the server sent it; several pages as one
    /// object whose `listKey` array holds every item, with `next_cursor` null.
    func json(listKey: String) throws(ClientError) -> Data {
        guard answers.count > 1 else { return answers.first?.body ?? Data() }
        var merged: [String: JSONValue] = [:]
        var items: [JSONValue] = []
        for answer in answers {
            guard let object = (try? JSONValue.parse(answer.body))?.objectValue,
                  case .array(let pageItems)? = object[listKey] else {
                throw ClientError("the server's answer has no \"\(listKey)\" list")
            }
            merged = object
            items += pageItems
        }
        merged[listKey] = .array(items)
        merged["next_cursor"] = .null
        return JSONValue.object(merged).canonicalEncoding()
    }
}
