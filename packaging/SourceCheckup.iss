; Inno Setup script: the Windows installer around the PyInstaller folder (dist\SourceCheckup).
;   iscc /DAppVersion=0.1.0 packaging\SourceCheckup.iss     ->  dist\SourceCheckup-0.1.0-setup.exe
; Used by .github/workflows/dist.yml; installs per user (no administrator rights needed), adds a Start
; menu entry for the app and puts the command line (sourcecheckup-cli.exe) beside it.
#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{7B0C7D0E-5E0B-4C53-9E1C-2F5B3C1D8A41}
AppName=SourceCheckup
AppVersion={#AppVersion}
AppPublisher=SourceCheckup
DefaultDirName={autopf}\SourceCheckup
DefaultGroupName=SourceCheckup
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
OutputDir=..\dist
OutputBaseFilename=SourceCheckup-{#AppVersion}-setup
Compression=lzma2
SolidCompression=yes
ArchitecturesInstallIn64BitMode=x64compatible
UninstallDisplayIcon={app}\SourceCheckup.exe

[Files]
Source: "..\dist\SourceCheckup\*"; DestDir: "{app}"; Flags: recursesubdirs createallsubdirs ignoreversion

[Icons]
Name: "{group}\SourceCheckup"; Filename: "{app}\SourceCheckup.exe"
Name: "{group}\Uninstall SourceCheckup"; Filename: "{uninstallexe}"
Name: "{autodesktop}\SourceCheckup"; Filename: "{app}\SourceCheckup.exe"; Tasks: desktopicon

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; Flags: unchecked

[Run]
Filename: "{app}\SourceCheckup.exe"; Description: "Start SourceCheckup"; Flags: nowait postinstall skipifsilent
