#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import SoundFile

/// A file a recorder writes as a take, one track or several (a jaq extension, Swift only):
/// what `jaq record` writes and everything that keeps a take safe, in one place.
///
/// - The container rules are Audio File Services' own (`WritableContainer`), the file is
///   created by the same function as AudioFileCreateWithURL's (`ContainerFile`) and the
///   samples go in through the same transfer as AudioFileWritePackets (`SampleTransfer`).
/// - WAV grows into RF64 past 4 GiB (and stays plain WAV below); CAF samples are written
///   little-endian (flagged so in the header); AIFF big-endian, as its queue format says.
/// - `makeDurable` brings every header up to date and flushes the files to the disk with one
///   `syncfs` per file system: a take survives SIGKILL and power loss up to the last call.
/// - `reserve` takes the disk space of the next frames (`fallocate`) before they are written,
///   so a full disk stops every track of a take on the same frame.
///
/// Thread safety: one thread at a time per file (jaq's writer thread).
public final class AudioTakeFile {
    /// The layout of a take's samples, and the container they go in.
    public struct Format: Sendable {
        public enum Samples: Sendable { case int16, int24, int32, float32 }
        /// The name given (`wav`, `flac`, ...).
        public let name: String
        public let samples: Samples
        /// Samples big-endian in the file (and so in the queue's buffers): AIFF.
        public let bigEndian: Bool
        /// Compressed containers take typed frames (libsndfile or jaq's codecs encode); others raw bytes.
        public var isCompressed: Bool { encoding != nil || container?.isEncoded == true }
        public let fileExtension: String
        /// The container libsndfile writes, whose rules (`WritableContainer.storage`) Audio File
        /// Services' writes follow too; nil for an `encoding`'s file.
        let container: WritableContainer?
        /// An AAC or ALAC take (m4a, or caf with a codec): encoded by the codecs of the queues and
        /// written through Audio File Services (`EncodedTake`); nil for libsndfile's containers.
        public let encoding: Encoding?

        /// The codec and file type of an encoded take.
        public struct Encoding: Sendable {
            public let formatID: AudioFormatID
            /// ALAC's source depth flag (kAppleLosslessFormatFlag_16/24BitSourceData), 0 for AAC.
            public let formatFlags: AudioFormatFlags
            public let fileType: AudioFileTypeID
            /// Bits per second (AAC), nil for the codec's default.
            public let bitRate: UInt32?

            public init(formatID: AudioFormatID, formatFlags: AudioFormatFlags, fileType: AudioFileTypeID, bitRate: UInt32?) {
                self.formatID = formatID
                self.formatFlags = formatFlags
                self.fileType = fileType
                self.bitRate = bitRate
            }
        }

        /// The format of an encoded take: float samples go to the encoder.
        public init(name: String, fileExtension: String, encoding: Encoding) {
            self.init(name: name, samples: .float32, bigEndian: false, fileExtension: fileExtension, container: nil, encoding: encoding)
        }

        init(name: String, samples: Samples, bigEndian: Bool, fileExtension: String, container: WritableContainer?, encoding: Encoding? = nil) {
            self.name = name
            self.samples = samples
            self.bigEndian = bigEndian
            self.fileExtension = fileExtension
            self.container = container
            self.encoding = encoding
        }

        /// Bytes of one sample of one channel in the queue's buffers.
        public var bytesPerSample: Int {
            switch samples {
            case .int16: 2
            case .int24: 3
            case .int32, .float32: 4
            }
        }

        /// Whether the header can be rewritten mid-take (crash-safe takes, once a second).
        /// Compressed containers can't: Ogg would gain a new stream per rewrite.
        var rewritesHeader: Bool { container?.updatesHeaderWhileWriting ?? false }

        /// `wav` takes grow into RF64 past 4 GiB.
        var growsIntoRF64: Bool { container == .wave }

        /// One track's (or one file's) samples as Audio File Services describes them:
        /// interleaved, in the byte order of the queue's buffers.
        func layout(channelCount: Int, sampleRate: Int) -> PCMLayout {
            let encoding: SampleEncoding = switch samples {
            case .int16: .signedInteger(bits: 16)
            case .int24: .signedInteger(bits: 24)
            case .int32: .signedInteger(bits: 32)
            case .float32: .float32
            }
            return PCMLayout(encoding: encoding, isBigEndian: bigEndian, channelCount: channelCount, sampleRate: Double(sampleRate))
        }

        /// The queue format that records straight into this layout: linear PCM, packed, one
        /// plane per channel (kAudioFormatFlagIsNonInterleaved, a jaq extension).
        public func queueFormat(channels: Int, sampleRate: Double) -> AudioStreamBasicDescription {
            var flags: AudioFormatFlags = kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved
            flags |= samples == .float32 ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
            if bigEndian { flags |= kAudioFormatFlagIsBigEndian }
            let bytes = UInt32(bytesPerSample)
            return AudioStreamBasicDescription(
                mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: bytes,
                mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: UInt32(channels),
                mBitsPerChannel: bytes * 8, mReserved: 0)
        }

    }

    public let path: String
    public let format: Format
    public let channelCount: Int
    /// Frames written so far.
    public private(set) var framesWritten: Int64 = 0
    /// libsndfile's file, or the encoder and its Audio File Services file.
    let file: SoundFile?
    let encoded: EncodedTake?
    /// How the samples go to libsndfile, and the most audio the header can count.
    private let transfer: SampleTransfer?
    private let bytesPerFrame: Int
    private let audioByteLimit: Int64?

    /// Creates the file; it must not exist.
    /// - Throws: `AudioTakeFileError` naming the file and why (no such directory, exists, a
    ///   rate or channel count the container cannot hold...).
    public init(path: String, format: Format, sampleRate: Int, channelCount: Int) throws(AudioTakeFileError) {
        let layout = format.layout(channelCount: channelCount, sampleRate: sampleRate)
        self.path = path
        self.format = format
        self.channelCount = channelCount
        bytesPerFrame = layout.bytesPerFrame
        guard let container = format.container else {
            do {
                encoded = try EncodedTake(path: path, encoding: format.encoding!, sampleRate: Double(sampleRate), channelCount: channelCount)
            } catch {
                throw Self.missingDirectory(path) ?? error
            }
            file = nil
            transfer = nil
            audioByteLimit = nil
            return
        }
        let storage: (format: SoundFile.Format, transfer: SampleTransfer)
        do {
            storage = try container.storage(for: layout)
        } catch {
            throw AudioTakeFileError(path: path, reason: error.reason)
        }
        do {
            file = try ContainerFile.create(path: path, container: container, layout: layout, format: storage.format,
                                            replacing: false, readable: false, headerUpdates: .onRequest,
                                            growsIntoRF64: format.growsIntoRF64)
        } catch {
            throw Self.missingDirectory(path) ?? AudioTakeFileError(path: path, reason: "cannot create it: " + Self.reason(error))
        }
        encoded = nil
        transfer = storage.transfer
        audioByteLimit = ContainerFile.audioByteLimit(container, growsIntoRF64: format.growsIntoRF64, path: path)
    }

    deinit {
        try? file?.close()
        encoded?.abandon()
    }

    /// The error for a file that could not be created because its directory does not exist;
    /// nil if it does. Asked only once the creation failed: for a file made, the open's own
    /// check is enough (issue #29: three system calls and a URL fewer per track).
    private static func missingDirectory(_ path: String) -> AudioTakeFileError? {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard !FileManager.default.fileExists(atPath: directory) else { return nil }
        return AudioTakeFileError(path: path, reason: "the directory \(directory) does not exist")
    }

    /// Writes `frames` frames in the format's sample layout (interleaved when several channels),
    /// through the same transfer as AudioFileWritePackets.
    /// - Throws: `AudioTakeFileError` (disk full, I/O error, a WAVE-less container's 4 GiB
    ///   limit); the frames before the failure are written.
    public func write(_ bytes: UnsafeRawBufferPointer, frames: Int) throws(AudioTakeFileError) {
        guard frames > 0, let base = bytes.baseAddress else { return }
        guard let file, let transfer else {
            try encoded?.write(base.assumingMemoryBound(to: Float.self), frames: frames)
            framesWritten += Int64(frames)
            return
        }
        let count = ContainerFile.framesWithin(audioByteLimit, start: framesWritten, frames: frames, bytesPerFrame: bytesPerFrame)
        let moved = transfer.write(file, frames: count, bytesPerFrame: bytesPerFrame, from: base)
        framesWritten += Int64(moved.count)
        if moved.count < count { throw failure(moved.error) }
        if count < frames {
            throw AudioTakeFileError(path: path, reason: "\(format.container?.name ?? format.name) files hold at most \(audioByteLimit ?? 0) bytes of audio (record wav, w64 or caf for longer takes)")
        }
    }

    /// Whether the file takes its channels as planes (`write(planes:frames:)`): an encoded take,
    /// whose encoder works on planes, so a writer holding planes need not interleave them.
    public var takesPlanes: Bool { encoded != nil }

    /// Writes `frames` frames given as `channelCount` planes of float samples one after another
    /// in `planes` (an encoded take; see `takesPlanes`).
    /// - Throws: `AudioTakeFileError` (the encoder, the disk), or for a file that takes
    ///   interleaved frames.
    public func write(planes: UnsafeRawBufferPointer, frames: Int) throws(AudioTakeFileError) {
        guard let encoded else { throw AudioTakeFileError(path: path, reason: "\(format.name) takes interleaved frames") }
        guard frames > 0, let base = planes.baseAddress, planes.count >= frames * channelCount * 4 else { return }
        try encoded.write(planes: base.assumingMemoryBound(to: Float.self), frames: frames)
        framesWritten += Int64(frames)
    }

    /// Reserves the disk space of the next `frames` frames (plus a little for a header that
    /// grows as it is updated). Compressed files, whose sizes are unknown, reserve nothing.
    /// - Parameter last: these are the file's last frames (a take of known length): exactly
    ///   their space is reserved, so that the finished file has nothing reserved past its end
    ///   to give back at `close`.
    /// - Throws: `AudioTakeFileError` if the file system is full.
    public func reserve(frames: Int, last: Bool = false) throws(AudioTakeFileError) {
        guard !format.isCompressed, let file else { return }
        do {
            _ = try file.reserveSpace(byteCount: byteCount(frames: frames) + (last ? 0 : 4096))
        } catch {
            throw failure(error)
        }
    }

    /// Bytes free for an unprivileged writer on the file's file system (`statvfs`), nil if unknown.
    public var freeBytes: Int64? {
        var status = statvfs()
        guard statvfs(path, &status) == 0 else { return nil }
        return Int64(status.f_bavail) * Int64(status.f_frsize)
    }

    /// Bytes `frames` frames take in the file.
    public func byteCount(frames: Int) -> Int { frames * channelCount * format.bytesPerSample }

    /// Completes the header and closes the file.
    public func close() throws(AudioTakeFileError) {
        if let encoded { return try encoded.close() }
        do { try file?.close() } catch { throw failure(error) }
    }

    /// Brings the headers of `files` up to date (they describe every frame written) and
    /// flushes them to the disk, with one `syncfs` per file system rather than an `fsync` per
    /// file (64 tracks would be 64 journal commits a second). If a file system refuses, each
    /// of its files is synced alone to name the one that failed.
    /// - Throws: `AudioTakeFileError` of the first file that could not be flushed.
    public static func makeDurable(_ files: [AudioTakeFile]) throws(AudioTakeFileError) {
        // Encoded takes are flushed by their muxer, a fragment a second (crash-safe MPEG-4).
        let files = files.filter { $0.file != nil }
        for take in files where take.format.rewritesHeader { take.file?.updateHeaderNow() }
        var done = Set<UInt64>()
        for take in files {
            guard let file = take.file else { continue }
            guard let fileSystem = file.fileSystemID else {
                do { try file.synchronize() } catch { throw take.failure(error) }
                continue
            }
            guard done.insert(fileSystem).inserted else { continue }
            do { try file.synchronizeFileSystem() } catch {
                for same in files where same.file?.fileSystemID == fileSystem {
                    do { try same.file?.synchronize() } catch { throw same.failure(error) }
                }
                throw take.failure(error)
            }
        }
    }

    private func failure(_ error: SoundFileError?) -> AudioTakeFileError {
        AudioTakeFileError(path: path, reason: error.map(Self.reason) ?? "short write",
                           isDiskFull: error?.errno == ENOSPC)
    }

    private static func reason(_ error: SoundFileError) -> String {
        guard let code = error.errno else { return error.reason }
        return code == ENOSPC ? "disk full (\(String(cString: strerror(code))))" : String(cString: strerror(code))
    }
}

extension AudioTakeFile.Format {
    /// The format for a container name (wav, w64, rf64, aiff, caf, flac, ogg, opus, mp3)
    /// and a sample size (16, 24, 32, float).
    /// - Throws: `AudioTakeFileError` whose reason says what to use instead.
    public init(name format: String, bits: String) throws(AudioTakeFileError) {
        let samples: Samples
        switch bits.lowercased() {
        case "16": samples = .int16
        case "24": samples = .int24
        case "32": samples = .int32
        case "float", "f32", "32f": samples = .float32
        default: throw AudioTakeFileError(path: nil, reason: "--bits \(bits): use 16, 24, 32 or float")
        }
        func make(_ name: String, _ container: WritableContainer, _ samples: Samples, bigEndian: Bool = false,
                  ext: String) -> AudioTakeFile.Format {
            AudioTakeFile.Format(name: name, samples: samples, bigEndian: bigEndian, fileExtension: ext, container: container)
        }
        switch format.lowercased() {
        case "wav": self = make("wav", .wave, samples, ext: "wav")
        case "rf64": self = make("rf64", .rf64, samples, ext: "rf64")
        case "w64": self = make("w64", .wave64, samples, ext: "w64")
        case "aiff", "aif":
            guard samples != .float32 else {
                throw AudioTakeFileError(path: nil, reason: "AIFF holds integer samples: use --format caf or wav for float")
            }
            self = make("aiff", .aiff, samples, bigEndian: true, ext: "aif")
        case "caf": self = make("caf", .caf, samples, ext: "caf")
        case "flac":
            guard samples == .int16 || samples == .int24 else { throw AudioTakeFileError(path: nil, reason: "FLAC holds 16- or 24-bit samples") }
            self = make("flac", .flac, samples, ext: "flac")
        case "ogg", "vorbis": self = make("ogg", .oggVorbis, .float32, ext: "ogg")
        case "opus": self = make("opus", .oggOpus, .float32, ext: "opus")
        case "mp3": self = make("mp3", .mp3, .float32, ext: "mp3")
        default:
            throw AudioTakeFileError(path: nil, reason: "--format \(format): use wav, w64, rf64, aiff, caf, flac, ogg, opus or mp3")
        }
    }
}

/// Why a take file could not be created or written: the file and the reason.
public struct AudioTakeFileError: Error, CustomStringConvertible {
    /// The file (nil for a format that does not exist).
    public let path: String?
    public let reason: String
    /// The file system is full (ENOSPC).
    public var isDiskFull = false

    public var description: String { path.map { "\($0): \(reason)" } ?? reason }
}
