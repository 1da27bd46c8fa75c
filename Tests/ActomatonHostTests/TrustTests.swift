@testable import ActomatonHost
import Foundation
import Testing

/// Whose code runs: a plugin file, and every directory above it, must be changeable by no one
/// but root and the user running the host; the file is opened once, without blocking, and
/// judged by its size and ELF header before it is read.
@Suite("Trust: which plugin files load")
struct TrustTests {
    private func loadError(_ path: String, options: Plugin.LoadOptions = .init()) -> String? {
        #expect(throws: PluginLoadError.self) { try Plugin.load(path: path, options: options) }?.description
    }

    @Test func fileOwnedByAnotherUserIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        #expect(chown(path, 4242, 4242) == 0)
        #expect(loadError(path) == "\(path): refusing to load a plugin file owned by another user (uid 4242): "
            + "its owner could change the code the host runs; it must belong to root or to the user running the host")
        // The operator can say otherwise.
        #expect(try Plugin.load(path: path, options: .init(allowWritableByOthers: true)).name == "counter")
        // Owned by root again: loads.
        #expect(chown(path, 0, 0) == 0)
        #expect(try Plugin.load(path: path).name == "counter")
    }

    @Test func directoryOthersCanWriteIsRefusedUnlessSticky() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        chmod(directory, 0o777)
        #expect(loadError(path) == "\(path): refusing to load a plugin from a directory others can change: \(directory) "
            + "can be written by every user (mode 777); move the plugin to a directory only you and root can write, "
            + "or pass --allow-writable to load it anyway")
        chmod(directory, 0o775)
        #expect(loadError(path)?.contains("can be written by its group (mode 775)") == true)
        // The sticky bit (as on /tmp): others may add files but not replace this one.
        chmod(directory, 0o1777)
        #expect(try Plugin.load(path: path).name == "counter")
        chmod(directory, 0o777)
        #expect(try Plugin.load(path: path, options: .init(allowWritableByOthers: true)).name == "counter")
    }

    @Test func directoryOwnedByAnotherUserIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inner = directory + "/theirs"
        try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: false)
        let path = inner + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        #expect(chown(inner, 4242, 4242) == 0)
        #expect(loadError(path)?.contains("\(inner) belongs to another user (uid 4242)") == true)
    }

    @Test func aSymbolicLinkIsJudgedByItsTarget() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/real.so"
        try install(plugin("CounterPlugin"), at: target)
        let link = directory + "/counter.so"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try Plugin.load(path: link).name == "counter")
        // The target changes hands: the link no longer loads.
        #expect(chown(target, 4242, 4242) == 0)
        #expect(loadError(link)?.contains("owned by another user (uid 4242)") == true)
        // A link to a target in a directory others can write.
        let open = directory + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        chmod(open, 0o777)
        try install(plugin("CounterPlugin"), at: open + "/counter.so")
        let second = directory + "/second.so"
        try FileManager.default.createSymbolicLink(atPath: second, withDestinationPath: open + "/counter.so")
        #expect(loadError(second)?.contains("\(open) can be written by every user") == true)
    }

    @Test func fifoDeviceAndDirectoryAreRefusedAtOnce() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/x.so"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Nobody writes to the FIFO: a blocking open would hang here for ever.
        #expect(loadError(fifo) == "\(fifo): not a regular file (it is a FIFO)")
        #expect(loadError("/dev/null") == "/dev/null: not a regular file (it is a character device)")
        let folder = directory + "/y.so"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(loadError(folder) == "\(folder): not a regular file (it is a directory)")
    }

    @Test func sizeLimitAtTheLimitAndOnePast() throws {
        let path = plugin("CounterPlugin")
        let size = Int64(try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64)
        #expect(try Plugin.load(path: path, options: .init(maxFileSize: size)).name == "counter")
        #expect(loadError(path, options: .init(maxFileSize: size - 1))
            == "\(path): the file is \(size) bytes, more than the limit of \(size - 1) bytes (--max-plugin-size raises it)")
    }

    @Test func aHugeFileIsRefusedWithoutReadingIt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/huge.so"
        // A sparse 3 GiB file that starts like the real plugin: nothing is read or copied.
        try install(plugin("CounterPlugin"), at: path)
        #expect(truncate(path, 3 << 30) == 0)
        // Not read: the bytes this process read meanwhile (other tests' small plugins included)
        // stay far below the file's 3 GiB. (A time limit failed here once under load.)
        let before = try Self.bytesReadByThisProcess()
        #expect(loadError(path) == "\(path): the file is \(3 << 30) bytes, more than the limit of \(256 << 20) bytes (--max-plugin-size raises it)")
        let read = try Self.bytesReadByThisProcess() - before
        #expect(read < 1 << 30, "\(read) bytes read while refusing the file")
        // Not copied: no private copy directory (`actomaton-host-XXXXXX` in the temporary
        // directory) holds a file over the limit. Other tests copy small plugins there meanwhile,
        // and remove them. (This test once pointed TMPDIR, process-wide, at a directory of its
        // own and removed it: a test making a directory at that moment lost it.)
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var copies: [String] = []
        let files = FileManager.default
        for name in (try? files.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix("actomaton-host-") && !name.hasPrefix("actomaton-host-tests-") {
            let directory = base + "/" + name
            for file in (try? files.contentsOfDirectory(atPath: directory)) ?? [] {
                let size = (try? files.attributesOfItem(atPath: directory + "/" + file))?[.size] as? Int ?? 0
                if size > 256 << 20 { copies.append(directory + "/" + file) }
            }
        }
        #expect(copies.isEmpty, "no private copy is left behind: \(copies)")
    }

    /// `rchar` of `/proc/self/io`: the bytes this process's `read` calls returned.
    static func bytesReadByThisProcess() throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("rchar:") }),
              let count = Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces))
        else { throw CocoaError(.fileReadCorruptFile) }
        return count
    }

    @Test func elfHeaderIsCheckedFirst() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func header(class elfClass: UInt8 = 2, data: UInt8 = 1, type: UInt16 = 3, machine: UInt16 = 62) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 64)
            bytes[0...3] = [0x7F, 0x45, 0x4C, 0x46]
            bytes[4] = elfClass
            bytes[5] = data
            bytes[16] = UInt8(type & 0xFF)
            bytes[18] = UInt8(machine & 0xFF)
            return bytes
        }
        let cases: [([UInt8], String)] = [
            (Array("#!/bin/sh\n".utf8), "not a shared library this host can load (it is not an ELF file)"),
            ([0x7F, 0x45, 0x4C, 0x46, 2], "not a shared library this host can load (the ELF header is truncated)"),
            (header(class: 1), "not a shared library this host can load (it is a 32-bit ELF file; this host is 64-bit)"),
            (header(data: 2), "not a shared library this host can load (it is a big-endian ELF file; this host is little-endian)"),
            (header(type: 2), "not a shared library this host can load (it is an executable, not a shared library)"),
            (header(type: 1), "not a shared library this host can load (it is a relocatable object (.o), not a shared library)"),
        ]
        for (number, (bytes, message)) in cases.enumerated() {
            let path = directory + "/case\(number).so"
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o644])
            #expect(loadError(path) == "\(path): \(message)")
        }
        #if arch(x86_64)
        let path = directory + "/arm.so"
        _ = FileManager.default.createFile(atPath: path, contents: Data(header(machine: 183)), attributes: [.posixPermissions: 0o644])
        #expect(loadError(path) == "\(path): not a shared library this host can load (it is built for another architecture (ELF machine 183); this host is x86-64)")
        #endif
    }

    @Test func aReplacedFileIsJudgedBeforeItIsReloaded() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        let host = PluginHost()
        #expect(await host.scan(directory: directory).map(\.description) == ["loaded plugin counter 1.0.0 from \(path)"])
        let counter = try await host.machine(named: "counter")
        try await counter.send("add", [.int(5)])
        // Another user's version replaces it.
        try install(plugin("CounterPlugin"), at: path)
        #expect(chown(path, 4242, 4242) == 0)
        let events = await host.scan(directory: directory)
        #expect(events.count == 1)
        #expect(events.first?.description.contains("owned by another user (uid 4242)") == true)
        #expect(await counter.describedState() == #"{"count":5}"#)
        #expect(await host.scan(directory: directory).isEmpty, "reported once")
    }

    @Test func aDanglingLinkIsReportedOnceUntilItChanges() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let link = directory + "/gone.so"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory + "/nowhere.so")
        let host = PluginHost()
        #expect(await host.scan(directory: directory).map(\.description) == ["error: \(link): no such file"])
        #expect(await host.scan(directory: directory).isEmpty)
        #expect(await host.scan(directory: directory).isEmpty)
        // The link now points at a plugin: loaded.
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: plugin("CounterPlugin"))
        #expect(await host.scan(directory: directory).map(\.description) == ["loaded plugin counter 1.0.0 from \(link)"])
    }
}
