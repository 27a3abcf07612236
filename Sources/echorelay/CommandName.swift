import Foundation

/// How to spell this program in a command printed for the user to run: `echorelay` when that
/// name on PATH is this very program, `swift run echorelay` when it runs from a build folder,
/// else its full path. Every printed example then works as printed.
enum CommandName {
    static func current() -> String {
        guard let executable = Bundle.main.executablePath.map(canonical) else { return "echorelay" }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for folder in path.split(separator: ":") where canonical("\(folder)/echorelay") == executable {
            return "echorelay"
        }
        return executable.contains("/.build/") ? "swift run echorelay" : executable
    }

    private static func canonical(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}
