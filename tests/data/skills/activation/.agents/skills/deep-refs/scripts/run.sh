#!/bin/sh
echo 'never executed'
