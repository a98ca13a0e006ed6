# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for rtpartctl(1)                                      -*- shell-script -*-
#
# What it offers comes from rtpartctl itself, so that a command added to its verb table is
# completed with no change here: the commands from 'rtpartctl help', a command's options and
# arguments from its usage and option lines ('rtpartctl COMMAND --help'), profile names from
# 'rtpartctl list' on the --root given on the line. An argument named in the usage is completed
# by its name: PROFILE with the installed profiles (or, once it holds a '/', the .json files),
# COMMAND or VERB with the commands, NAME after 'vm remove' with the ledger's VMs, DIR with
# directories, FILE or PATH with files, a lowercase word ("latency") as itself; "A|B" offers both, as an option's value "share|isolate" does.

# The option lines of a help text on stdin, one option a line: its names, the long one last with
# its "=ARG" when it takes one ("-r --root=DIR").
__rtpartctl_options() {
        awk '/^Options:$/ { f = 1; next }
             f && /^ +-/ {
                     line = ""
                     for (i = 1; i <= NF; i++) {
                             w = $i
                             sub(/,$/, "", w)
                             if (w !~ /^-/)
                                     break
                             line = line (line == "" ? "" : " ") w
                     }
                     print line
             }'
}

# The value an option takes ("DIR" for --root or -r), from __rtpartctl_options's lines in $1;
# nothing when it takes none.
__rtpartctl_value() {
        local line name
        while read -r line; do
                for name in $line; do
                        if [[ ${name%%=*} == "$2" ]]; then
                                [[ $line == *=* ]] && echo "${line##*=}"
                                return
                        fi
                done
        done <<<"$1"
}

# The words on stdin (one a line) that begin with $1, one a line. Nothing in them is expanded:
# compgen -W expands "$(…)" and "${…}" in its word list, so a word (a profile's name from
# 'rtpartctl list') would run as a command on the user's Tab. A word with any character the shell
# gives a meaning to is left out too: inserted on the line as it is, it would run when the line
# does. Commands, options and profile names have none.
__rtpartctl_filter() {
        local w
        while IFS= read -r w; do
                [[ -n $w && $w != *[!A-Za-z0-9._,:=+@%/-]* && $w == "$1"* ]] && printf '%s\n' "$w"
        done
        return 0
}

# The commands of the overview ('rtpartctl help') on stdin.
__rtpartctl_commands() {
        awk '/^Commands:$/ { f = 1; next } f && /^$/ { exit } f && /^  [^ ]/ { print $1 }'
}

_rtpartctl() {
        # shellcheck disable=SC2034 # split: set by _init_completion -s
        local cur prev words cword split
        _init_completion -s || return

        local ctl=${words[0]}
        command -v -- "$ctl" >/dev/null 2>&1 || ctl=rtpartctl

        # The overview's options take values where they do: what an option needs is the same
        # before and after the command.
        local overview options
        overview=$("$ctl" help 2>/dev/null) || return
        options=$(__rtpartctl_options <<<"$overview")

        # The option before the cursor, when it takes a value: complete the value.
        local takes=""
        [[ $prev == -* ]] && takes=$(__rtpartctl_value "$options" "$prev")
        if [[ -n $takes ]]; then
                case $takes in
                DIR) _filedir -d ;;
                FILE | PATH) _filedir ;;
                *'|'*) mapfile -t COMPREPLY < <(__rtpartctl_filter "$cur" <<<"${takes//|/$'\n'}") ;;
                esac
                return
        fi

        # The root given on the line, the command, and the arguments given to it so far.
        local i root="" verb="" first="" nargs=0 skip=false
        for ((i = 1; i < cword; i++)); do
                local w=${words[i]}
                if $skip; then
                        skip=false
                        continue
                fi
                case $w in
                --root=*) root=${w#--root=} ;;
                --root | -r)
                        root=${words[i + 1]}
                        skip=true
                        ;;
                -r?*) root=${w#-r} ;;
                --*=* | -) ;;
                -*)
                        # An option that takes its value in the next word.
                        [[ -n $(__rtpartctl_value "$options" "$w") ]] && skip=true
                        ;;
                *)
                        if [[ -z $verb ]]; then
                                verb=$w
                        else
                                ((nargs++ == 0)) && first=$w
                        fi
                        ;;
                esac
        done
        # shellcheck disable=SC2088 # a literal "~/" typed on the line, which bash has not expanded
        [[ $root == "~/"* ]] && root=$HOME/${root#"~/"}

        local commands
        commands=$(__rtpartctl_commands <<<"$overview")
        if [[ -n $verb ]] && ! grep -qxF -- "$verb" <<<"$commands"; then
                return # not a command: nothing to offer
        fi

        local help=$overview
        [[ -n $verb ]] && help=$("$ctl" "$verb" --help 2>/dev/null)

        if [[ $cur == -* ]]; then
                local words_opts
                words_opts=$(__rtpartctl_options <<<"$help" | tr ' ' '\n' | sed 's/=.*/=/')
                mapfile -t COMPREPLY < <(__rtpartctl_filter "$cur" <<<"$words_opts")
                [[ ${COMPREPLY-} == *= ]] && compopt -o nospace 2>/dev/null
                return
        fi

        if [[ -z $verb ]]; then
                mapfile -t COMPREPLY < <(__rtpartctl_filter "$cur" <<<"$commands")
                return
        fi

        # The usage line names the arguments: "Usage: rtpartctl check [OPTIONS] latency".
        local usage spec
        local -a specs
        usage=$(sed -n 's/^Usage: [^ ]* [^ ]* \[OPTIONS\] *//p' <<<"$help" | head -n 1)
        read -r -a specs <<<"$usage"
        spec=${specs[nargs]-}
        spec=${spec//[\[\]]/}
        [[ $spec == *... ]] && spec=${spec%...}
        [[ -z $spec ]] && return

        local alt wordlist=""
        local -a alts
        IFS='|' read -r -a alts <<<"$spec"
        for alt in "${alts[@]}"; do
                case $alt in
                PROFILE)
                        if [[ $cur == */* || $cur == .* ]]; then
                                _filedir json
                        else
                                wordlist+=$'\n'$("$ctl" ${root:+--root "$root"} list 2>/dev/null | awk '{ print $1 }')
                        fi
                        ;;
                COMMAND | VERB) wordlist+=$'\n'$commands ;;
                NAME)
                        # vm remove NAME: the VMs of the ledger.
                        [[ $verb == vm && $first == remove ]] &&
                                wordlist+=$'\n'$("$ctl" ${root:+--root "$root"} vm list 2>/dev/null | awk 'NR > 1 { print $1 }')
                        ;;
                DIR) _filedir -d ;;
                FILE | PATH) _filedir ;;
                *[A-Z]*) ;;
                *) wordlist+=$'\n'$alt ;;
                esac
        done
        mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(__rtpartctl_filter "$cur" <<<"$wordlist")
} &&
        complete -F _rtpartctl rtpartctl
