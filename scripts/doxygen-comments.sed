# Doxygen's INPUT_FILTER for the public headers (Doxyfile): the headers document their API in
# plain // comments, which this turns into Doxygen's /// (a comment on the lines before a
# declaration) and ///< (a comment after a member or an enumerator on its line); a header's
# opening comment becomes the file's description. The headers themselves stay as written.
s#^\([[:space:]]*\)//\( \|$\)#\1///\2#
s#\([;,{]\)\([[:space:]]\+\)//\( \|$\)#\1\2///<\3#
1s#^///#/// @file\n///#
