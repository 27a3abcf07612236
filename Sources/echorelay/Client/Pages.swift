import ArgumentParser
import EchoRelayAPI
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
    func items<Item: API.Listed>(_ item: Item.Type) throws(ClientError) -> [Item] {
        var items: [Item] = []
        for answer in answers { items += try answer.decode(API.Page<Item>.self).items }
        return items
    }

    /// What `--json` prints: one page exactly as the server sent it; several pages as one
    /// object whose list holds every item, with `next_cursor` null.
    func json<Item: API.Listed>(_ item: Item.Type) throws(ClientError) -> Data {
        let listKey = Item.listName
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

/// The options every list verb shares: a time window on when things happened, and the pages.
struct PageOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only those at or after this time (for events, when they were received): \(TimeArgument.help).",
                               valueName: "time"))
    var since: String?

    @Option(help: ArgumentHelp("Only those before this time: \(TimeArgument.help).", valueName: "time"))
    var until: String?

    @OptionGroup var paging: PagingOptions

    func validate() throws {
        try TimeArgument.validate(since, flag: "--since")
        try TimeArgument.validate(until, flag: "--until")
    }

    /// Fetches `path` with `filters`, this window and the page options.
    func fetch(_ api: APIClient, _ path: [String], filters: [(String, String)]) async throws(ClientError) -> Pages {
        var query = filters
        if let since = TimeArgument.value(since) { query.append(("since", since)) }
        if let until = TimeArgument.value(until) { query.append(("until", until)) }
        return try await paging.fetch(api, path, filters: query)
    }
}

/// The page size, where to start, and whether to follow every page (lists without a time
/// window use these alone).
struct PagingOptions: ParsableArguments {
    @Option(help: "Items per request, 1–100. (default: the server's, 50)")
    var limit: Int?

    @Option(help: "Start from this page: the next_cursor of an earlier --json answer.")
    var cursor: String?

    @Flag(help: "Follow the pages to the end instead of stopping after the first.")
    var all = false

    func validate() throws {
        if let limit, !(1...100).contains(limit) { throw ValidationError("--limit must be 1–100, got \(limit)") }
    }

    /// Fetches `path` with `filters` and this page size.
    func fetch(_ api: APIClient, _ path: [String], filters: [(String, String)]) async throws(ClientError) -> Pages {
        var query = filters
        if let limit { query.append(("limit", String(limit))) }
        return try await Pages.fetch(api, path, query: query, cursor: cursor, all: all)
    }
}

extension Pages {
    /// What a list verb prints: with `--json`, `json(_:)`; otherwise `text` of the items, or
    /// `none` when there are none, and then, on standard error when a page was left
    /// unfetched, how to get the rest (`more` names the items).
    func show<Item: API.Listed>(
        _ item: Item.Type, json: Bool, more: String, none: String, _ text: ([Item]) -> String
    ) throws(ClientError) {
        if json { return printJSON(try self.json(Item.self)) }
        let listed = try items(Item.self)
        print(listed.isEmpty ? none : text(listed))
        if let nextCursor { writeToStandardError("more \(more): --all lists every page, or --cursor \(nextCursor) the next one") }
    }
}
