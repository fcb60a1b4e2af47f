#!/bin/sh
# Installs edgemail as a systemd service, run as root from the repository's top directory
# after `cargo build --profile dist`:
#   sudo sh dist/install.sh [path/to/edgemail]
# Safe to run again (an upgrade): the configuration and the data are kept as they are.
#
# What it sets up: a dedicated system user `edgemail` without a shell or a login; the binary in
# /usr/local/bin (root's, 0755); /etc/edgemail (0700) and its edgemail.toml (0600), owned by
# that user, since the file may hold the relay password; the data directory /var/lib/edgemail
# (0700, the user's; systemd's StateDirectory= keeps it so); the unit, enabled and started.
set -eu

binary=${1:-target/dist/edgemail}
here=$(dirname "$0")
user=edgemail

[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -x "$binary" ] || { echo "install.sh: no binary at $binary (cargo build --profile dist)" >&2; exit 1; }

if ! id -u "$user" >/dev/null 2>&1; then
    useradd --system --user-group --home-dir /var/lib/edgemail --no-create-home \
        --shell /usr/sbin/nologin "$user"
fi

install -o root -g root -m 0755 "$binary" /usr/local/bin/edgemail
install -d -o "$user" -g "$user" -m 0700 /etc/edgemail /var/lib/edgemail
if [ ! -e /etc/edgemail/edgemail.toml ]; then
    install -o "$user" -g "$user" -m 0600 "$here/edgemail.toml" /etc/edgemail/edgemail.toml
fi
# An existing file keeps its content but gets the owner and mode the service expects.
chown "$user:$user" /etc/edgemail/edgemail.toml /var/lib/edgemail
chmod 0600 /etc/edgemail/edgemail.toml
chmod 0700 /etc/edgemail /var/lib/edgemail

install -o root -g root -m 0644 "$here/edgemail.service" /etc/systemd/system/edgemail.service
systemctl daemon-reload
systemctl enable --now edgemail
echo "edgemail installed; administer it as the service user, for example:"
echo "  sudo -u $user edgemail domain add example.com --config /etc/edgemail/edgemail.toml"
