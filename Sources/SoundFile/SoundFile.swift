import CSndFile
public enum SoundFileVersion { public static var string: String { String(cString: sf_version_string()) } }
