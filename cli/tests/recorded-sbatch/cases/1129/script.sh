#!/bin/bash
#PBS -z -I -k oe -S /bin/sh -u root -c n -C /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
